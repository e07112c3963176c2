import { expect, test, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PORT as MAIN_PORT } from '../playwright.config';
import { Agent, FIXTURE, shoot, startOwnSwitchboard, waitLive, type OwnSwitchboard } from './helpers';

// Issue 37: the five-minute path of a daily Claude Code and Cursor user.
// A Switchboard of its own, whose HOME holds a realistic ~/.claude.json
// (settings, user servers, a project's servers) and ~/.cursor/mcp.json
// (one server the same as Claude Code's): import them all, confirm them
// in one batch, connect both clients (their entries move behind the
// gate), and an agent with Cursor's token lists only gated tools and has
// an ask call answered on the dashboard.
const PORT = MAIN_PORT + 12;
const BASE = `http://127.0.0.1:${PORT}`;
let own: OwnSwitchboard;
let home: string;

const claudeJSON = () => ({
  numStartups: 57,
  theme: 'dark',
  mcpServers: {
    notes: { type: 'stdio', command: FIXTURE, args: ['-tools', '2', '-name', 'notes'] },
    tracker: { command: FIXTURE, args: ['-tools', '3', '-name', 'tracker'], env: { TRACKER_TOKEN: 'trk-five-minutes-0123456789' } },
  },
  projects: {
    '/home/me/shop': {
      allowedTools: [],
      hasTrustDialogAccepted: true,
      mcpServers: { db: { command: FIXTURE, args: ['-tools', '2', '-name', 'db'] } },
    },
  },
});
const cursorJSON = () => ({
  mcpServers: {
    notes: { command: FIXTURE, args: ['-tools', '2', '-name', 'notes'] },
    search: { command: FIXTURE, args: ['-tools', '4', '-name', 'search'] },
  },
});

test.beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-fiveminutes-home-'));
  fs.writeFileSync(path.join(home, '.claude.json'), JSON.stringify(claudeJSON(), null, 2) + '\n');
  fs.mkdirSync(path.join(home, '.cursor'));
  fs.writeFileSync(path.join(home, '.cursor', 'mcp.json'), JSON.stringify(cursorJSON(), null, 2) + '\n');
  own = await startOwnSwitchboard(PORT, 'fiveminutes', { home });
});

test.afterAll(async () => {
  await own?.stop();
});

// connect connects client key from the Agents page: the preview names the
// entries that move behind Switchboard, then it is written.
async function connect(page: Page, key: string, moved: string[]) {
  await page.goto(`${BASE}/agents`);
  await page.getByTestId('connect-client').selectOption(key);
  await page.getByTestId('connect-preview').click();
  const change = page.getByTestId('connect-change');
  for (const name of moved) {
    await expect(change.getByTestId('connect-moved')).toContainText(name);
  }
  await expect(change.getByTestId('connect-diff')).toContainText('+    "switchboard"');
  if (key === 'claude-code') {
    await shoot(page, 'fiveminutes-connect-preview');
  }
  await change.getByTestId('connect-write').click();
  await expect(page.getByTestId('connect-done')).toContainText('Moved behind Switchboard');
}

test('import from Claude Code and Cursor, one confirmation, connect both, and the agent sees only the gate', async ({ page, playwright }) => {
  const errors: string[] = [];
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(own.loginURL);
  await expect(page).toHaveURL(`${BASE}/`);

  // The empty list finds both files: 3 servers in Claude Code's (its
  // project's included), 2 in Cursor's.
  const found = page.getByTestId('empty').getByTestId('found-config');
  await expect(found).toHaveCount(2);
  await expect(found.nth(0)).toContainText('Claude Code');
  await expect(found.nth(0).getByTestId('found-count')).toHaveText('3 servers');
  await expect(found.nth(1)).toContainText('Cursor');
  await shoot(page, 'fiveminutes-found');
  await page.getByTestId('empty').getByTestId('import-all').click();
  await expect(page).toHaveURL(`${BASE}/import/all`);
  // notes is in both files, the same server: added once.
  await expect(page.getByTestId('import-report-summary')).toHaveText('Imported: 4 added, 1 skipped');
  await expect(page.getByTestId('batch-launch')).toHaveCount(4);
  await expect(page.locator('body')).not.toContainText('trk-five-minutes');
  await page.getByTestId('confirm-launches-button').click();
  await expect(page).toHaveURL(`${BASE}/`);
  await expect(page.getByTestId('verify-all-summary')).toHaveText('4 of 4 done', { timeout: 30_000 });
  for (const id of ['notes', 'tracker', 'db', 'search']) {
    await expect(page.locator(`[data-testid=server-row][data-server-id=${id}] [data-testid=status]`)).toHaveAttribute('data-status', 'success');
  }
  await shoot(page, 'fiveminutes-servers');

  // tracker's first tool asks a person.
  const apiRequest = await playwright.request.newContext({ baseURL: BASE, extraHTTPHeaders: { Authorization: `Bearer ${own.apiToken}` } });
  expect((await apiRequest.put('/api/v1/servers/tracker/tools/tool_000/policy', { data: { policy: 'ask' } })).status()).toBe(200);

  // Before connecting, both clients reach their servers directly.
  await page.goto(`${BASE}/agents`);
  await expect(page.locator('[data-testid=client-gate][data-client=claude-code]')).toHaveAttribute('data-state', 'direct');
  await expect(page.locator('[data-testid=client-gate][data-client=cursor]')).toHaveAttribute('data-state', 'direct');

  await connect(page, 'claude-code', ['notes', 'tracker', 'db', '/home/me/shop']);
  await connect(page, 'cursor', ['notes', 'search']);
  for (const key of ['claude-code', 'cursor']) {
    await expect(page.locator(`[data-testid=client-gate][data-client=${key}]`)).toHaveAttribute('data-state', 'gated');
  }
  await shoot(page, 'fiveminutes-agents-connected');

  // The clients' files hold Switchboard's entry only; the rest is kept.
  const claude = JSON.parse(fs.readFileSync(path.join(home, '.claude.json'), 'utf8'));
  expect(Object.keys(claude.mcpServers)).toEqual(['switchboard']);
  expect(Object.keys(claude.projects['/home/me/shop'].mcpServers)).toEqual([]);
  expect(claude.numStartups).toBe(57);
  const cursor = JSON.parse(fs.readFileSync(path.join(home, '.cursor', 'mcp.json'), 'utf8'));
  expect(Object.keys(cursor.mcpServers)).toEqual(['switchboard']);
  expect(fs.existsSync(path.join(home, '.claude.json.switchboard-moved'))).toBe(true);

  // An agent with Cursor's own token: every tool is a gated one.
  const token = (cursor.mcpServers.switchboard.headers.Authorization as string).replace('Bearer ', '');
  const agentRequest = await playwright.request.newContext({ baseURL: BASE });
  const agent = new Agent(agentRequest, token);
  await agent.connect();
  const list = await agent.post({ jsonrpc: '2.0', id: 9, method: 'tools/list' });
  const names: string[] = list.body.result.tools.map((t: { name: string }) => t.name);
  expect(names.length).toBe(2 + 3 + 2 + 4);
  for (const n of names) {
    expect(n).toMatch(/^(notes|tracker|db|search)__tool_\d{3}$/);
  }

  // The ask call waits for a person, who allows it on the dashboard.
  await page.goto(`${BASE}/agents`);
  await waitLive(page);
  const pending = agent.call('tracker__tool_000', { issue: 'FIVE-1' });
  const card = page.getByTestId('approval-card');
  await expect(card).toBeVisible();
  await expect(card.getByTestId('approval-tool')).toHaveText('tool_000');
  await shoot(page, 'fiveminutes-ask');
  await page.getByTestId('approve-call').click();
  const answer = await pending;
  expect(answer.body.result.isError).toBeFalsy();
  expect(answer.body.result.content[0].text).toContain('FIVE-1');
  await expect(card).toHaveCount(0);
  expect(errors).toEqual([]);
  await agentRequest.dispose();
  await apiRequest.dispose();
});
