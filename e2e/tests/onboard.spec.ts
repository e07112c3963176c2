import { expect, test, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PORT as MAIN_PORT } from '../playwright.config';
import { FIXTURE, startOwnSwitchboard, type OwnSwitchboard } from './helpers';

// Issue 21, item 3: from an empty list to six verified servers in three
// clicks. A Switchboard of its own, whose HOME holds a Claude Desktop
// config and a Cursor config that list six fixture servers between them.
const PORT = MAIN_PORT + 10; // beside the main one, as the other own Switchboards are
const BASE = `http://127.0.0.1:${PORT}`;
let own: OwnSwitchboard;

// The six servers: the fixture with other args each; one argument hides a
// zero-width space, which the confirmation must reveal.
const claude = {
  'Fixture one': { command: FIXTURE, args: ['-tools', '1'] },
  'Fixture two': { command: FIXTURE, args: ['-tools', '2', '-name', 'two words'] },
  'Fixture three': { command: FIXTURE, args: ['-tools', '3', '-name', 'zero\u200bwidth'], env: { FIXTURE_TOKEN: 'sk-onboard-0123456789abcdef' } },
};
const cursor = {
  'Fixture four': { command: FIXTURE, args: ['-tools', '4'] },
  'Fixture five': { command: FIXTURE, args: ['-tools', '5', '-page-size', '2'] },
  'Fixture six': { command: FIXTURE, args: ['-tools', '6', '-name', 'a-long-name-'.repeat(12) + 'end'] },
};
const ids = ['fixture-five', 'fixture-four', 'fixture-one', 'fixture-six', 'fixture-three', 'fixture-two'];

// fitsNarrow checks that the page fits a 390 px wide screen (long paths
// and commands wrap), then restores the viewport.
async function fitsNarrow(page: Page) {
  const size = page.viewportSize()!;
  await page.setViewportSize({ width: 390, height: 800 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await page.setViewportSize(size);
}

test.beforeAll(async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-onboard-home-'));
  const write = (rel: string, servers: unknown) => {
    const p = path.join(home, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, JSON.stringify({ mcpServers: servers }, null, 2));
  };
  write('.config/Claude/claude_desktop_config.json', claude);
  write('.cursor/mcp.json', cursor);
  own = await startOwnSwitchboard(PORT, 'onboard', { home });
});

test.afterAll(async () => {
  await own?.stop();
});

test('Import all from the configs found, one batch confirmation, and six servers verify', async ({ page }) => {
  await page.goto(own.loginURL);
  await expect(page).toHaveURL(`${BASE}/`);

  // The empty list offers the two configs found, with Import all.
  const empty = page.getByTestId('empty');
  const found = empty.getByTestId('found-config');
  await expect(found).toHaveCount(2);
  await expect(found.nth(0)).toContainText('Claude Desktop');
  await expect(found.nth(0).getByTestId('found-count')).toHaveText('3 servers');
  await expect(found.nth(1)).toContainText('Cursor');
  await expect(found.nth(1).getByTestId('found-count')).toHaveText('3 servers');
  await page.screenshot({ path: 'test-results/onboard-empty-list.png', fullPage: true });
  await fitsNarrow(page);

  await empty.getByTestId('import-all').click();
  await expect(page).toHaveURL(`${BASE}/import/all`);
  await expect(page.getByTestId('import-report-summary')).toHaveText('Imported: 6 added, 0 skipped');

  // One page: every launch in full, hidden characters revealed, all ticked.
  const launches = page.getByTestId('batch-launch');
  await expect(launches).toHaveCount(6);
  for (const [id, args] of [
    ['fixture-one', '-tools 1'],
    ['fixture-two', "-tools 2 -name 'two words'"],
    ['fixture-four', '-tools 4'],
    ['fixture-five', '-tools 5 -page-size 2'],
    ['fixture-six', '-tools 6 -name ' + 'a-long-name-'.repeat(12) + 'end'],
  ]) {
    const l = page.locator(`[data-testid=batch-launch][data-server-id=${id}]`);
    await expect(l.getByTestId('confirm-command-line')).toHaveText(`${FIXTURE} ${args}`);
    await expect(l.getByTestId('batch-launch-check')).toBeChecked();
  }
  const three = page.locator('[data-testid=batch-launch][data-server-id=fixture-three]');
  await expect(three.getByTestId('confirm-command-line').getByTestId('hidden-char')).toContainText('U+200B');
  await expect(three.getByTestId('confirm-env-key')).toHaveText('FIXTURE_TOKEN');
  await expect(page.locator('body')).not.toContainText('sk-onboard-0123456789abcdef');
  const confirm = page.getByTestId('confirm-launches-button');
  await expect(confirm).toHaveText('Confirm and verify 6 servers');
  await page.screenshot({ path: 'test-results/onboard-batch-confirmation.png', fullPage: true });
  await fitsNarrow(page);

  // One confirmation, one batch: the list shows its progress live.
  await confirm.click();
  await expect(page).toHaveURL(`${BASE}/`);
  await expect(page.getByTestId('verify-all-summary')).toHaveText('6 of 6 done', { timeout: 30_000 });
  for (const id of ids) {
    await expect(page.locator(`[data-testid=server-row][data-server-id=${id}] [data-testid=status]`)).toHaveAttribute('data-status', 'success');
  }
  await expect(page.getByTestId('verify-all-progress')).toContainText('6 ok');
  await expect(page.getByTestId('confirm-launches-link')).toHaveCount(0);
});
