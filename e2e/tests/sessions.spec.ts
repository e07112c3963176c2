import { test, expect } from '@playwright/test';
import { PORT as MAIN_PORT } from '../playwright.config';
import { startOwnSwitchboard, type OwnSwitchboard } from './helpers';

// A Switchboard of its own, restarted on its own database: a restart
// logs nobody out, and keeps the API token; "Log out everywhere" ends
// every session.
const PORT = MAIN_PORT + 4; // beside the main one, so worktrees with their own SWITCHBOARD_E2E_PORT do not collide
let own: OwnSwitchboard;

test.afterAll(async () => { await own?.stop(); });

test('a restart keeps the session; Log out everywhere ends it', async ({ browser }) => {
  const base = `http://127.0.0.1:${PORT}`;
  own = await startOwnSwitchboard(PORT, 'sessions');
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(own.loginURL);
  await expect(page).toHaveURL(`${base}/`);
  await expect(page.locator('[data-testid=live-status]')).toHaveText('live');

  // Restart on the same database.
  const { dir, apiToken } = own;
  await own.stop();
  own = await startOwnSwitchboard(PORT, 'sessions', { dir });
  expect(own.apiToken, 'the API token after a restart').toBe(apiToken);

  // The tab reconnects by itself; a new page load needs no login either.
  await expect(page.locator('[data-testid=live-status]')).toHaveText('live', { timeout: 20_000 });
  await page.goto(`${base}/agents`);
  await expect(page).toHaveURL(`${base}/agents`);
  await expect(page.locator('[data-testid=nav-agents]')).toBeVisible();

  // Another browser, logged in with the token, is logged out too.
  const other = await browser.newContext();
  const otherPage = await other.newPage();
  await otherPage.goto(`${base}/login`);
  await otherPage.fill('#token', apiToken);
  await otherPage.click('button[type=submit]');
  await expect(otherPage).toHaveURL(`${base}/`);

  await page.click('[data-testid=account-menu] summary');
  await page.click('[data-testid=logout-everywhere]');
  await expect(page).toHaveURL(`${base}/login`);
  await page.goto(`${base}/`);
  await expect(page).toHaveURL(`${base}/login`);
  await otherPage.goto(`${base}/servers/new`);
  await expect(otherPage).toHaveURL(`${base}/login`);

  // The token still logs in.
  await page.fill('#token', apiToken);
  await page.click('button[type=submit]');
  await expect(page).toHaveURL(`${base}/`);
  await other.close();
  await context.close();
});
