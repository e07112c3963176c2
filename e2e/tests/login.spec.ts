import { test, expect } from '@playwright/test';
import { PORT as MAIN_PORT } from '../playwright.config';
import { startOwnSwitchboard, type OwnSwitchboard } from './helpers';

// A Switchboard of its own, as a person starts it: no token chosen, so it
// generates one, and prints a one-time login URL.
const PORT = MAIN_PORT + 1; // beside the main one, so worktrees with their own SWITCHBOARD_E2E_PORT do not collide
let own: OwnSwitchboard;
let loginURL = '';
let apiToken = '';

test.beforeAll(async () => {
  own = await startOwnSwitchboard(PORT, 'login');
  ({ loginURL, apiToken } = own);
});

test.afterAll(async () => { await own.stop(); });

test('the one-time login URL becomes a strict session cookie and a clean URL, once', async ({ browser }) => {
  const base = `http://127.0.0.1:${PORT}`;
  const context = await browser.newContext();
  const page = await context.newPage();

  // Without a session every page leads to the login.
  await page.goto(`${base}/servers/new`);
  await expect(page).toHaveURL(`${base}/login`);

  await page.goto(loginURL);
  await expect(page).toHaveURL(`${base}/`);
  await expect(page.locator('[data-testid=live-status]')).toHaveText('live');
  const cookies = await context.cookies(base);
  const session = cookies.find(c => c.name === 'switchboard_session');
  expect(session, 'session cookie').toBeTruthy();
  expect(session!.httpOnly).toBe(true);
  expect(session!.sameSite).toBe('Strict');
  expect(await page.evaluate(() => document.cookie)).toBe('');
  const code = loginURL.split('code=')[1];
  const html = await page.content();
  expect(html).not.toContain(code);
  expect(html).not.toContain(apiToken);

  // The link is used up: another browser gets no session from it.
  const other = await browser.newContext();
  const otherPage = await other.newPage();
  const answer = await otherPage.goto(loginURL);
  expect(answer!.status()).toBe(401);
  await expect(otherPage.locator('body')).toContainText('already used');
  expect((await other.cookies(base)).find(c => c.name === 'switchboard_session')).toBeUndefined();
  await otherPage.goto(`${base}/`);
  await expect(otherPage).toHaveURL(`${base}/login`);

  // The printed token logs in through the form; a wrong one does not.
  await otherPage.fill('#token', 'not-the-token');
  await otherPage.click('button[type=submit]');
  await expect(otherPage.locator('body')).toContainText('not valid');
  await otherPage.fill('#token', apiToken);
  await otherPage.click('button[type=submit]');
  await expect(otherPage).toHaveURL(`${base}/`);
  expect(await otherPage.content()).not.toContain(apiToken);

  // Logging out ends the session for good.
  await page.click('[data-testid=account-menu] summary');
  await page.click('[data-testid=logout]');
  await expect(page).toHaveURL(`${base}/login`);
  await page.goto(`${base}/`);
  await expect(page).toHaveURL(`${base}/login`);
  await other.close();
  await context.close();
});
