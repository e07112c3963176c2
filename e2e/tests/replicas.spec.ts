import { expect, test } from '@playwright/test';
import { login, shoot } from './helpers';

// Issue 38, operating it: the Replicas page. A Switchboard on its own
// file is its only replica, leading and ready; the page refreshes itself
// every 5 s (the replicas' heartbeat) without a reload.
test('the Replicas page shows who leads and whether this replica is ready', async ({ page }) => {
  await login(page);
  await page.getByTestId('nav-replicas').click();
  await expect(page).toHaveURL(/\/replicas$/);
  const rows = page.getByTestId('replica-row');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-leader', 'true');
  await expect(rows.first().getByTestId('replica-self')).toBeVisible();
  await expect(page.getByTestId('readiness')).toContainText('This replica is ready');
  await expect(page.locator('[data-testid=readiness-check][data-ok=true]')).toHaveCount(1);
  // The refresh swaps the panel in place.
  const refreshed = page.waitForResponse((r) => r.url().endsWith('/replicas') && r.request().headers()['hx-request'] === 'true', { timeout: 15_000 });
  expect((await refreshed).status()).toBe(200);
  await expect(rows).toHaveCount(1);
  await shoot(page, 'replicas');
});
