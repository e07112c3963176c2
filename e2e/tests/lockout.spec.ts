import { test, expect } from '@playwright/test';
import { PORT as MAIN_PORT } from '../playwright.config';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startOwnSwitchboard, type OwnSwitchboard } from './helpers';

// A page of another site must not be able to lock the owner out (issue 16,
// item 1): frames of /login?code=wrong once spent the failure budget of
// 127.0.0.1, and the right token got 429 for a minute. A Switchboard of
// its own, as a person starts it, so the genuine one-time link is unused.
const PORT = MAIN_PORT + 2; // beside the main one, so worktrees with their own SWITCHBOARD_E2E_PORT do not collide
let own: OwnSwitchboard;
let loginURL = '';
let apiToken = '';
let attacker: http.Server;
let attackerURL = '';
let frameRequests = 0;

test.beforeAll(async () => {
  own = await startOwnSwitchboard(PORT, 'lockout');
  ({ loginURL, apiToken } = own);

  // The other site: another origin (127.0.0.1 vs localhost are different
  // sites to the browser), a page with twelve frames of wrong login links,
  // loaded three times over.
  attacker = http.createServer((req, res) => {
    const frames = Array.from({ length: 12 }, (_, i) =>
      `<iframe src="http://localhost:${PORT}/login?code=wrong${i}-${Date.now()}"></iframe>`).join('\n');
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<!doctype html><title>a page on the web</title>${frames}`);
  });
  await new Promise<void>(r => attacker.listen(0, '127.0.0.1', r));
  attackerURL = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`;
});

test.afterAll(async () => {
  attacker?.close();
  await own.stop();
});

test('frames of wrong login links on another site do not lock the owner out', async ({ browser, playwright }) => {
  const evil = await browser.newContext();
  const page = await evil.newPage();
  page.on('request', req => { if (req.url().includes(`:${PORT}/login?code=`)) frameRequests++; });
  const answers: number[] = [];
  page.on('response', res => { if (res.url().includes(`:${PORT}/login?code=`)) answers.push(res.status()); });
  for (let round = 0; round < 3; round++) {
    await page.goto(attackerURL);
    await page.waitForLoadState('load'); // every frame answered (X-Frame-Options hides it, the request was made)
  }
  await expect.poll(() => answers.length).toBe(36);
  expect(frameRequests).toBe(36);
  // Refused as cross-site: never a wrong code counted (401), never 429.
  expect(new Set(answers)).toEqual(new Set([403]));
  await evil.close();

  // At once: the right API token works …
  const api = await playwright.request.newContext();
  const res = await api.get(`http://127.0.0.1:${PORT}/api/v1/servers`, { headers: { Authorization: `Bearer ${apiToken}` } });
  expect(res.status()).toBe(200);
  await api.dispose();

  // … the genuine one-time link logs in …
  const owner = await browser.newContext();
  const tab = await owner.newPage();
  await tab.goto(loginURL);
  await expect(tab).toHaveURL(`http://127.0.0.1:${PORT}/`);
  await expect(tab.locator('[data-testid=live-status]')).toHaveText('live');
  await owner.close();

  // … and so does the token form.
  const second = await browser.newContext();
  const form = await second.newPage();
  await form.goto(`http://127.0.0.1:${PORT}/login`);
  await form.fill('#token', apiToken);
  await form.click('button[type=submit]');
  await expect(form).toHaveURL(`http://127.0.0.1:${PORT}/`);
  await second.close();
});
