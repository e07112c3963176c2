import { test, expect } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// A Switchboard of its own, as a person starts it: no token chosen, so it
// generates one, and prints a one-time login URL.
const PORT = 7432;
let proc: ChildProcess;
let loginURL = '';
let apiToken = '';
let output = '';

test.beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-login-'));
  proc = spawn(path.resolve(__dirname, '../../bin/switchboard'), [], {
    env: { SWITCHBOARD_ADDR: `127.0.0.1:${PORT}`, SWITCHBOARD_DB: path.join(dir, 'sb.db'), HOME: dir, PATH: process.env.PATH || '/usr/bin:/bin' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', d => { output += d; });
  proc.stderr!.on('data', d => { output += d; });
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const url = output.match(/Open (http:\/\/127\.0\.0\.1:\d+\/login\?code=[0-9a-f]{64})/);
    const token = output.match(/API token .*: ([0-9a-f]{64})/);
    if (url && token) { loginURL = url[1]; apiToken = token[1]; return; }
    await new Promise(r => setTimeout(r, 50));
  }
  throw new Error(`no login URL printed: ${output}`);
});

test.afterAll(async () => {
  proc.kill('SIGTERM');
  await new Promise(r => proc.once('exit', r));
});

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
  await page.click('header button[type=submit]');
  await expect(page).toHaveURL(`${base}/login`);
  await page.goto(`${base}/`);
  await expect(page).toHaveURL(`${base}/login`);
  await other.close();
  await context.close();
});
