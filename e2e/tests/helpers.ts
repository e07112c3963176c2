import { expect, type APIRequestContext, type Locator, type Page } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MCP_TOKEN, TOKEN } from '../playwright.config';

// The fixture server, built by `make build`.
export const FIXTURE = path.resolve(__dirname, '../../bin/mcp-fixture');

// The real server-everything from npm, installed by `npm ci` in e2e/.
export const EVERYTHING = path.resolve(__dirname, '../node_modules/@modelcontextprotocol/server-everything/dist/index.js');

// login signs the browser context in with the access token.
export async function login(page: Page) {
  await page.goto('/login');
  await page.fill('#token', TOKEN);
  await page.click('button[type=submit]');
  await expect(page).toHaveURL(/\/$/);
  await page.waitForLoadState('domcontentloaded'); // the URL changes before the new page is parsed
}

// waitLive waits until the page's SSE connection is open, so no click
// races the stream.
export async function waitLive(page: Page) {
  await expect(page.locator('body')).toHaveAttribute('data-sse', 'open');
}

// addStdioServer fills the add form and saves; it returns on the detail page.
export async function addStdioServer(page: Page, id: string, command: string, args: string[], env: Record<string, string> = {}) {
  await page.goto('/servers/new');
  await page.fill('#id', id);
  await page.fill('#name', id);
  await page.selectOption('#transport', 'stdio');
  await page.fill('#command', command);
  await page.fill('#args', args.join('\n'));
  for (const [k, v] of Object.entries(env)) {
    await page.click('[data-testid=add-env]');
    await page.locator('#env-rows .row-pair input[name=env_key]').last().fill(k);
    await page.locator('#env-rows .row-pair input[name=env_value]').last().fill(v);
  }
  await page.click('[data-testid=save-button]');
  await expect(page).toHaveURL(new RegExp(`/servers/${id}$`));
}

// recordPhases starts recording every status label the status panel shows,
// with the time it appeared, and the time of the last click.
export async function recordPhases(page: Page) {
  await page.evaluate(() => {
    const w = window as any;
    w.__phases = [];
    w.__phaseAt = [];
    document.addEventListener('click', () => { w.__clickAt = performance.now(); }, true);
    const panel = document.querySelector('[data-testid=status-panel]')!;
    const note = () => {
      const s = panel.querySelector('[data-testid=status]');
      if (s && w.__phases[w.__phases.length - 1] !== s.textContent) {
        w.__phases.push(s.textContent);
        w.__phaseAt.push(performance.now());
      }
    };
    new MutationObserver(note).observe(panel, { childList: true, subtree: true, characterData: true });
  });
}

export async function phases(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as any).__phases);
}

// clickToLastPhaseMS is the time, measured in the page, from the last
// click to the last status label shown (no polling in between).
export async function clickToLastPhaseMS(page: Page): Promise<number> {
  return page.evaluate(() => {
    const w = window as any;
    return Math.round(w.__phaseAt[w.__phaseAt.length - 1] - w.__clickAt);
  });
}

// verifyConfirming clicks Verify on a server whose launch is not yet
// confirmed: the confirmation page must show the exact command line (or
// URL, for a remote server), and
// confirming it starts the Verify and returns to the server's page.
export async function verifyConfirming(page: Page, id: string, commandLine: string) {
  await page.click('[data-testid=status-panel] [data-testid=verify-button]');
  await expect(page).toHaveURL(new RegExp(`/servers/${id}/confirm$`));
  await expect(page.locator('[data-testid=confirm-command-line], [data-testid=confirm-url]')).toHaveText(commandLine);
  await page.click('[data-testid=confirm-button]');
  await expect(page).toHaveURL(new RegExp(`/servers/${id}$`));
}

// api calls Switchboard's JSON API with the bearer token.
export async function api(page: Page, method: string, url: string, data?: unknown) {
  const res = await page.request.fetch(url, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}` },
    data: data === undefined ? undefined : JSON.stringify(data),
  });
  return { status: res.status(), body: res.status() === 204 ? null : await res.json() };
}

// addVerified registers a stdio server through the API (with extra
// fields, such as default_policy), confirms and verifies it, and waits
// for the verification to succeed.
export async function addVerified(page: Page, id: string, command: string, args: string[], extra: Record<string, unknown> = {}) {
  const created = await api(page, 'POST', '/api/v1/servers', { id, name: id, transport: 'stdio', command, args, ...extra });
  expect(created.status).toBe(201);
  const started = await api(page, 'POST', `/api/v1/servers/${id}/verify`, { confirm: true });
  expect(started.status).toBe(202);
  await expect.poll(async () => (await api(page, 'GET', `/api/v1/jobs/${started.body.job.id}`)).body.job.status,
    { timeout: 30_000 }).toBe('success');
}

// OwnSwitchboard is a Switchboard of a test file's own, started as a
// person starts it: no token chosen, so it generates one and prints it
// with a one-time login URL.
export interface OwnSwitchboard {
  proc: ChildProcess;
  dir: string; // its database's directory: start another on it to restart
  output: () => string; // what it printed so far
  loginURL: string;
  apiToken: string;
  stop: () => Promise<void>;
}

// opts.home is the HOME it runs with, where it finds the clients' configs
// (and its working directory, where it finds a project's); by default its
// data directory. opts.dir is that data directory (the database and its
// token files): give the same one to start it again on the same data.
export async function startOwnSwitchboard(port: number, name: string, opts: { home?: string; dir?: string } = {}): Promise<OwnSwitchboard> {
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), `switchboard-${name}-`));
  const home = opts.home ?? dir;
  const proc = spawn(path.resolve(__dirname, '../../bin/switchboard'), [], {
    env: { SWITCHBOARD_ADDR: `127.0.0.1:${port}`, SWITCHBOARD_DB: path.join(dir, 'sb.db'), HOME: home, PATH: process.env.PATH || '/usr/bin:/bin' },
    cwd: opts.home ? home : undefined,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', d => { output += d; });
  proc.stderr!.on('data', d => { output += d; });
  const stop = async () => {
    proc.kill('SIGTERM');
    await new Promise(r => proc.once('exit', r));
  };
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const url = output.match(/Open (http:\/\/127\.0\.0\.1:\d+\/login\?code=[0-9a-f]{64})/);
    const token = output.match(/API token .*: ([0-9a-f]{64})/);
    if (url && token) return { proc, dir, output: () => output, loginURL: url[1], apiToken: token[1], stop };
    await new Promise(r => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`no login URL printed: ${output}`);
}

// Agent is a minimal MCP client of /mcp over Streamable HTTP, as an
// agent is.
export class Agent {
  session = '';
  // token is the endpoint's own unless a client's own is given.
  constructor(private request: APIRequestContext, private token: string = MCP_TOKEN) {}
  async post(body: unknown) {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    };
    if (this.session) { headers['Mcp-Session-Id'] = this.session; }
    const res = await this.request.post('/mcp', { headers, data: JSON.stringify(body), timeout: 60_000 });
    if (!this.session) { this.session = res.headers()['mcp-session-id'] || ''; }
    const text = await res.text();
    // A JSON answer, or the last data line of an SSE answer.
    const data = text.trim().startsWith('{') ? text : (text.split('\n').filter(l => l.startsWith('data:')).pop() || '').slice(5);
    return { status: res.status(), body: data ? JSON.parse(data) : null };
  }
  async connect() {
    const init = await this.post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
      protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'playwright-agent', version: '1' } } });
    expect(init.status).toBe(200);
    expect(this.session).not.toBe('');
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }
  call(name: string, args: unknown) {
    return this.post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } });
  }
}

// started runs a command in a process group of its own until it prints
// "listening <URL>", and returns the URL.
export async function started(procs: ChildProcess[], command: string, args: string[]): Promise<string> {
  const proc = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  procs.push(proc);
  let out = '';
  let err = '';
  proc.stderr!.on('data', d => { err += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} did not listen within 15 s: ${err}`)), 15_000);
    proc.stdout!.on('data', d => {
      out += d;
      const m = out.match(/listening (\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.once('exit', code => reject(new Error(`${command} exited (${code}): ${err}`)));
  });
}

// shoot takes the page at 1280 and 390 px, light and dark, into
// test-results/screens/NAME-WIDTH-SCHEME.png, checking that nothing is
// wider than the screen; it leaves the page light, at 1280 px.
export async function shoot(page: Page, name: string) {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth), `${name} at ${width} px`).toBeLessThanOrEqual(width);
      await page.screenshot({ path: `test-results/screens/${name}-${width}-${scheme}.png`, fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
}

// clickWhenWired clicks an element htmx swapped in (from an SSE event)
// once htmx has processed it: a click between the swap and htmx wiring
// its hx-post would do nothing (a person cannot click that fast; a test
// on a loaded machine can).
export async function clickWhenWired(el: Locator) {
  await expect.poll(() => el.evaluate((n) => {
    const d = (n as unknown as Record<string, { listenerInfos?: unknown[] } | undefined>)['htmx-internal-data'];
    return !!d && Array.isArray(d.listenerInfos) && d.listenerInfos.length > 0;
  }), { timeout: 10_000 }).toBe(true);
  await el.click();
}
