import { test, expect } from '@playwright/test';
import { EVERYTHING, addStdioServer, clickToLastPhaseMS, login, phases, recordPhases, verifyConfirming, waitLive } from './helpers';

test('add server-everything, verify live in two tabs, set a policy that survives reload and re-verify', async ({ context }) => {
  const page = await context.newPage();
  await login(page);
  await addStdioServer(page, 'everything', 'node', [EVERYTHING, 'stdio'], { SAMPLE_SECRET: 'never-shown-123' });
  await expect(page.locator('[data-testid=command-line]')).toHaveText(`node ${EVERYTHING} stdio`);
  await expect(page.locator('body')).not.toContainText('never-shown-123');

  // A second tab, opened before the click, must follow along live.
  const other = await context.newPage();
  await other.goto('/servers/everything');
  await waitLive(other);
  await recordPhases(other);
  await waitLive(page);

  // The first Verify shows the exact command for confirmation first.
  await verifyConfirming(page, 'everything', `node ${EVERYTHING} stdio`);
  const status = page.locator('[data-testid=status-panel] [data-testid=status]');
  await expect(status).toHaveAttribute('data-status', 'success', { timeout: 30_000 });

  // The other tab saw the phases arrive one by one, without a reload.
  const seen = await phases(other);
  expect(seen).toContain('initializing');
  expect(seen).toContain('listing page 1');
  expect(seen[seen.length - 1]).toBe('OK · 17 tools');
  expect(seen.indexOf('initializing')).toBeLessThan(seen.indexOf('listing page 1'));

  // 13 for every client, and 4 it lists only to a client that answers
  // what they ask: found by the listing that declares every feature.
  expect(seen).toContain('listing tools that ask agents');
  await expect(page.locator('[data-testid=tool-row]')).toHaveCount(17);
  await expect(page.locator('[data-testid=tool-row][data-tool-name="trigger-sampling-request"] [data-testid=tool-needs]')).toHaveText('only for an agent that answers sampling');
  await expect(page.locator('[data-testid=tool-row][data-tool-name="echo"] [data-testid=tool-needs]')).toHaveCount(0);
  await expect(page.locator('[data-testid=status-panel] [data-testid=tool-count]')).toHaveText('17');
  await expect(page.locator('[data-testid=server-info]')).toContainText('mcp-servers/everything');
  await expect(page.locator('[data-testid=protocol-version]')).not.toBeEmpty();
  await expect(page.locator('[data-testid=status-panel] [data-testid=verified-at]')).toContainText('ago');

  // The other tab saw the same live progress and the result.
  await expect(other.locator('[data-testid=status-panel] [data-testid=status]')).toHaveAttribute('data-status', 'success');
  await expect(other.locator('[data-testid=tool-row]')).toHaveCount(17);

  // Policies: default ask; deny one tool; it survives reload and re-verify.
  const echo = page.locator('[data-testid=tool-row][data-tool-name="echo"]');
  await expect(echo.locator('[data-testid=policy-select]')).toHaveValue('ask');
  const saved = page.waitForResponse(r => r.url().endsWith('/servers/everything/policy') && r.status() === 200);
  await echo.locator('[data-testid=policy-select]').selectOption('deny');
  await saved;
  await page.reload();
  await waitLive(page);
  await expect(page.locator('[data-testid=tool-row][data-tool-name="echo"] [data-testid=policy-select]')).toHaveValue('deny');

  // A confirmed launch verifies at once, live in this tab.
  const before = await page.locator('[data-testid=status-panel] [data-testid=verified-at]').getAttribute('data-ago');
  await recordPhases(page);
  await page.click('[data-testid=status-panel] [data-testid=verify-button]');
  await expect(page.locator('[data-testid=status-panel] [data-testid=verified-at]')).not.toHaveAttribute('data-ago', before!, { timeout: 30_000 });
  console.log(`verify of server-everything through the UI: ${await clickToLastPhaseMS(page)} ms (click to success badge, timed in the page)`);
  const again = await phases(page);
  expect(again).toContain('listing page 1');
  expect(again[again.length - 1]).toBe('OK · 17 tools');
  await expect(page.locator('[data-testid=status-panel] [data-testid=status]')).toHaveAttribute('data-status', 'success');
  await expect(page.locator('[data-testid=tool-row]')).toHaveCount(17);
  await expect(page.locator('[data-testid=tool-row][data-tool-name="echo"] [data-testid=policy-select]')).toHaveValue('deny');
  await page.reload();
  await expect(page.locator('[data-testid=tool-row][data-tool-name="echo"] [data-testid=policy-select]')).toHaveValue('deny');

  // The list page shows the count and the verified time.
  await page.goto('/');
  const row = page.locator('[data-testid=server-row][data-server-id="everything"]');
  await expect(row.locator('[data-testid=tool-count]')).toHaveText('17');
  await expect(row.locator('[data-testid=status]')).toHaveAttribute('data-status', 'success');
});
