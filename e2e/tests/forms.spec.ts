import AxeBuilder from '@axe-core/playwright';
import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addStdioServer, api, FIXTURE, login, verifyConfirming, waitLive } from './helpers';

// Screenshots of the form and of the re-confirmation, narrow and wide,
// for a person to look at (FORMS_SHOTS, or a temporary directory).
const SHOTS = process.env.FORMS_SHOTS || path.join(os.tmpdir(), 'switchboard-forms-shots');
fs.mkdirSync(SHOTS, { recursive: true });

// shoot checks the page at a phone's and a laptop's width, light and
// dark (no sideways overflow, no serious accessibility violation) and
// saves a screenshot of each.
async function shoot(page: Page, name: string) {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      const shot = `${name}-${width}${scheme === 'dark' ? '-dark' : ''}`;
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, `${shot} overflows sideways`).toBeLessThanOrEqual(0);
      const axe = await new AxeBuilder({ page }).analyze();
      const bad = axe.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => `${v.id}: ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')}`);
      expect(bad, `${shot}: accessibility`).toEqual([]);
      await page.screenshot({ path: path.join(SHOTS, `${shot}.png`), fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

test('the advanced settings are collapsed, per transport, in seconds and MiB', async ({ page }) => {
  await login(page);
  await page.goto('/servers/new');
  const advanced = page.locator('[data-testid=advanced]');
  await expect(advanced).not.toHaveAttribute('open');
  await expect(page.locator('#timeout_s')).toBeHidden();
  await advanced.locator('summary').click();
  await expect(page.locator('#memory_mb')).toBeVisible();
  await expect(page.locator('#timeout_s + .unit')).toHaveText('s');
  await expect(page.locator('#memory_mb + .unit')).toHaveText('MiB');
  await page.selectOption('#transport', 'http');
  await expect(page.locator('#memory_mb')).toBeHidden();
  await expect(page.locator('#timeout_s')).toBeVisible();
  await page.selectOption('#transport', 'stdio');

  // Out of range: the unit and range named, the input kept, still open.
  await page.fill('#id', 'units');
  await page.fill('#command', FIXTURE);
  await page.fill('#timeout_s', '200');
  await page.fill('#memory_mb', '8');
  await page.click('[data-testid=save-button]');
  await expect(page.locator('[data-testid=error-timeout_s]')).toContainText('seconds from 1 to 120');
  await expect(page.locator('[data-testid=error-memory_mb]')).toContainText('MiB from 16 to 1048576');
  await expect(page.locator('[data-testid=advanced]')).toHaveAttribute('open');
  await expect(page.locator('#timeout_s')).toHaveValue('200');
  await shoot(page, 'form-errors');

  await page.fill('#timeout_s', '2.5');
  await page.fill('#memory_mb', '512');
  await page.click('[data-testid=save-button]');
  await expect(page).toHaveURL(/\/servers\/units$/);
  const srv = await api(page, 'GET', '/api/v1/servers/units');
  expect([srv.body.timeout_ms, srv.body.memory_mb]).toEqual([2500, 512]);
});

test('edit a confirmed server: remove an env row, change an argument and a secret, see what changed, confirm, verify', async ({ page }) => {
  await login(page);
  await addStdioServer(page, 'reform', FIXTURE, ['-tools', '3'], { FIXTURE_TOKEN: 'e2e-form-secret-1', EXTRA_FLAG: 'e2e-form-secret-2' });
  await waitLive(page);
  await verifyConfirming(page, 'reform', `${FIXTURE} -tools 3`);
  const status = page.locator('[data-testid=status-panel] [data-testid=status]');
  await expect(status).toHaveAttribute('data-status', 'success');

  await page.click('[data-testid=edit-link]');
  await expect(page.locator('#env-rows .row-pair')).toHaveCount(2);
  await shoot(page, 'form-edit');
  await page.getByRole('button', { name: 'Remove EXTRA_FLAG' }).click();
  await expect(page.locator('#env-rows .row-pair')).toHaveCount(1);
  await expect(page.locator('[data-testid=add-env]')).toBeFocused();
  await page.fill('#args', '-tools\n2');
  await page.locator('#env-rows .row-pair input[name=env_value]').first().fill('e2e-form-secret-3');
  await page.click('[data-testid=save-review-button]');

  await expect(page).toHaveURL(/\/servers\/reform\/confirm$/);
  const changes = page.locator('[data-testid=launch-diff] [data-testid=launch-change]');
  await expect(changes).toHaveCount(3);
  await expect(changes.nth(0).locator('[data-testid=change-what]')).toHaveText('Argument 2');
  await expect(changes.nth(0).locator('[data-testid=change-kind]')).toHaveText('changed');
  await expect(changes.nth(0).locator('[data-testid=change-old]')).toHaveText('3');
  await expect(changes.nth(0).locator('[data-testid=change-new]')).toHaveText('2');
  await expect(changes.nth(1).locator('[data-testid=change-name]')).toHaveText('EXTRA_FLAG');
  await expect(changes.nth(1).locator('[data-testid=change-kind]')).toHaveText('removed');
  await expect(changes.nth(2).locator('[data-testid=change-name]')).toHaveText('FIXTURE_TOKEN');
  await expect(changes.nth(2).locator('[data-testid=change-kind]')).toHaveText('value changed');
  const html = await page.content();
  expect(html).not.toContain('e2e-form-secret');
  await expect(page.locator('[data-testid=confirm-command-line]')).toHaveText(`${FIXTURE} -tools 2`);
  await shoot(page, 'reconfirm-diff');

  await page.click('[data-testid=confirm-button]');
  await expect(page).toHaveURL(/\/servers\/reform$/);
  await expect(status).toHaveAttribute('data-status', 'success');
  const srv = await api(page, 'GET', '/api/v1/servers/reform');
  expect(Object.keys(srv.body.env)).toEqual(['FIXTURE_TOKEN']);
  expect(srv.body.args).toEqual(['-tools', '2']);
});
