import { expect, test } from '@playwright/test';
import { FIXTURE, api, login, waitLive } from './helpers';

// The tools table at scale (issue 21, item 4): a 100-tool server, searched
// and filtered in the page, a bulk policy on what the filter shows, and a
// visible "saved" on every change, which a live reload does not take away.
test('search, filter and bulk policy on a 100-tool server, with "saved" on every change', async ({ page }) => {
  await login(page);
  expect((await api(page, 'POST', '/api/v1/servers', { id: 'hundred', name: 'hundred', transport: 'stdio', command: FIXTURE, args: ['-tools', '100', '-page-size', '0'] })).status).toBe(201);
  const started = await api(page, 'POST', '/api/v1/servers/hundred/verify', { confirm: true });
  expect(started.status).toBe(202);
  await expect.poll(async () => (await api(page, 'GET', `/api/v1/jobs/${started.body.job.id}`)).body.job.status, { timeout: 30_000 }).toBe('success');
  type Tool = { name: string; policy: string; annotations?: { destructiveHint?: boolean } };
  const tools = async (): Promise<Tool[]> => (await api(page, 'GET', '/api/v1/servers/hundred/tools')).body.tools;
  const destructive = (await tools()).filter(t => t.annotations?.destructiveHint === true).map(t => t.name).sort();
  expect(destructive.length).toBeGreaterThan(0);
  expect(destructive.length).toBeLessThan(100);

  await page.goto('/servers/hundred');
  await waitLive(page);
  const rows = page.getByTestId('tool-row');
  const shown = page.locator('[data-testid=tool-row]:visible');
  await expect(rows).toHaveCount(100);
  await expect(page.getByTestId('tool-count-shown')).toHaveText('100 tools');
  // Compact: a row is a few lines, its details closed.
  const height = await rows.first().evaluate(el => el.getBoundingClientRect().height);
  expect(height).toBeLessThan(130);
  await expect(rows.first().getByTestId('input-schema')).toBeHidden();

  // Search matches names, titles and descriptions.
  await page.getByTestId('tool-search').fill('tool_04');
  await expect(shown).toHaveCount(10);
  await expect(page.getByTestId('tool-count-shown')).toHaveText('10 of 100 tools shown');
  await page.getByTestId('tool-search').fill('GENERATED FIXTURE TOOL NUMBER 7.');
  await expect(shown).toHaveCount(1);
  await expect(shown.getByTestId('tool-name')).toHaveText('tool_007');
  await page.getByTestId('tool-search').fill('');

  // The annotation filter, then "check every tool shown" and a bulk deny:
  // exactly the destructive tools change.
  await page.getByTestId('filter-hint').selectOption('destructive');
  await expect(shown).toHaveCount(destructive.length);
  await page.getByTestId('check-shown').check();
  await page.getByTestId('bulk-policy').selectOption('deny');
  await page.getByTestId('bulk-apply').click();
  await expect(page.getByTestId('policies-saved')).toHaveText('saved');
  await expect.poll(async () => (await tools()).filter(t => t.policy === 'deny').map(t => t.name).sort()).toEqual(destructive);
  // The filter survives the section's reload, and the policy filter agrees.
  await expect(shown).toHaveCount(destructive.length);
  await page.getByTestId('filter-hint').selectOption('');
  await page.getByTestId('filter-policy').selectOption('deny');
  await expect(shown).toHaveCount(destructive.length);
  await page.getByTestId('filter-policy').selectOption('');
  await expect(shown).toHaveCount(100);

  // One row: open its details, change its policy. "saved" shows, and the
  // live reload that follows keeps it and the open details.
  const row = page.locator('[data-testid=tool-row][data-tool-name="tool_001"]');
  await row.getByTestId('tool-details').locator('summary').click();
  await expect(row.getByTestId('input-schema')).toBeVisible();
  await row.getByTestId('policy-select').selectOption('allow');
  await expect(row.getByTestId('policy-saved')).toBeVisible();
  await expect.poll(async () => (await tools()).find(t => t.name === 'tool_001')!.policy).toBe('allow');
  // A change made elsewhere reloads the section while this one is fresh.
  expect((await api(page, 'PUT', '/api/v1/servers/hundred/tools/tool_002/policy', { policy: 'allow' })).status).toBe(200);
  await expect(page.locator('[data-testid=tool-row][data-tool-name="tool_002"] [data-testid=policy-select]')).toHaveValue('allow');
  await expect(row.getByTestId('input-schema')).toBeVisible();
  await page.screenshot({ path: 'test-results/tools-filtered.png' });
});
