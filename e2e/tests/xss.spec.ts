import { test, expect, type Page } from '@playwright/test';
import * as path from 'node:path';
import { FIXTURE, addStdioServer, login, verifyConfirming, waitLive } from './helpers';

// The fixture in -mode xss: markup (<script>, <img onerror>, hx-post),
// invisible characters and icon URLs in every field a server controls.

// watch records everything a page must never do: open a dialog, request
// anything from another origin, or violate its Content Security Policy.
async function watch(page: Page, base: string) {
  const seen = { dialogs: [] as string[], foreign: [] as string[] };
  page.on('dialog', d => { seen.dialogs.push(d.message()); d.dismiss(); });
  page.on('request', r => { if (!r.url().startsWith(base)) { seen.foreign.push(r.url()); } });
  await page.addInitScript(() => {
    const w = window as any;
    w.__csp = [];
    document.addEventListener('securitypolicyviolation', e => w.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
  });
  return seen;
}

async function checkInert(page: Page) {
  // No markup from the server became elements.
  await expect(page.locator('img')).toHaveCount(0);
  await expect(page.locator('[onerror]')).toHaveCount(0);
  await expect(page.locator('a[href^="javascript:"]')).toHaveCount(0);
  await expect(page.locator('[hx-trigger="load"]')).toHaveCount(0);
  const scripts = await page.locator('script').evaluateAll(els => els.map(e => e.getAttribute('src') || 'inline'));
  expect(scripts.every(s => s.startsWith('/static/')), `scripts: ${scripts}`).toBe(true);
  expect(await page.evaluate(() => (window as any).__csp)).toEqual([]);
}

test('a hostile server\'s markup and hidden characters show as text, and nothing runs or loads', async ({ page, baseURL }) => {
  const seen = await watch(page, baseURL!);
  await login(page);
  // The watch works, and the CSP is enforced: an inline script the test
  // itself injects is blocked and counted (then forgotten).
  await page.evaluate(() => { const s = document.createElement('script'); s.textContent = 'window.__ran = 1'; document.body.appendChild(s); });
  await expect.poll(() => page.evaluate(() => (window as any).__csp.length)).toBe(1);
  expect(await page.evaluate(() => (window as any).__ran)).toBeUndefined();
  await page.evaluate(() => { (window as any).__csp = []; });
  await addStdioServer(page, 'xss', FIXTURE, ['-mode', 'xss', '-tools', '0']);
  await waitLive(page);
  await verifyConfirming(page, 'xss', `${FIXTURE} -mode xss -tools 0`);
  await expect(page.locator('[data-testid=status-panel] [data-testid=status]')).toHaveAttribute('data-status', 'success');

  // Checked on the live-swapped page, then on a full render.
  for (const render of ['swapped in live', 'after reload']) {
    if (render === 'after reload') { await page.reload(); await waitLive(page); }
    await expect(page.locator('[data-testid=tool-row]'), render).toHaveCount(3);

    const names = await page.locator('[data-testid=tool-name]').allTextContents();
    expect(names, render).toContain(`<img src=x onerror="alert('name')">`);
    expect(names, render).toContain(`x" hx-post="/logout" hx-trigger="load`);
    await expect(page.locator('[data-testid=server-info]'), render).toContainText(`<img src=x onerror="alert('server')"> 1.0<script>alert("v")</script>`);

    const row = page.locator('[data-testid=tool-row][data-tool-name="xss_everywhere"]');
    await expect(row.locator('[data-testid=tool-title]'), render).toContainText('<script>alert("xss")</script><img src=x onerror=');
    await expect(row.locator('[data-testid=tool-description]'), render).toContainText('<button hx-post="/logout" hx-trigger="load">hx</button>');
    // The hidden characters are visible markers.
    const marks = row.locator('[data-testid=tool-description] [data-testid=hidden-char]');
    await expect(marks.filter({ hasText: 'U+200B' }), render).toHaveCount(1);
    await expect(marks.filter({ hasText: 'U+202E' }), render).toHaveCount(1);
    await expect(marks.filter({ hasText: 'hidden tag text: "ignore previous instructions"' }), render).toHaveCount(1);
    await expect(row.locator('[data-testid=tool-flag-hidden]'), render).toBeVisible();
    await expect(row.locator('[data-testid=tool-flag-injection]'), render).toContainText('ignore previous instructions');

    await checkInert(page);
  }
  // The server's instructions: shown as text, hidden text revealed, flagged.
  await expect(page.locator('[data-testid=instructions]')).toContainText('<script>alert("xss")</script>');
  await expect(page.locator('[data-testid=instructions-flag-injection]')).toBeVisible();

  // The list page renders the server's data too.
  await page.goto('/');
  await waitLive(page);
  await checkInert(page);

  // The hx-post="/logout" in the data did not log us out; nothing ran or
  // loaded anywhere.
  await page.goto('/servers/xss');
  await expect(page).toHaveURL(/\/servers\/xss$/);
  expect(seen.dialogs).toEqual([]);
  expect(seen.foreign).toEqual([]);
});
