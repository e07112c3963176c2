import { expect, test, type Page } from '@playwright/test';
import { PORT } from '../playwright.config';
import { Agent, EVERYTHING, FIXTURE, addVerified, api, login, waitLive } from './helpers';

test('an ask call waits as a card on every tab until a person approves it', async ({ context, playwright }) => {
  const page = await context.newPage();
  await login(page);
  await addVerified(page, 'askfx', FIXTURE, ['-tools', '2']);
  expect((await api(page, 'PUT', '/api/v1/servers/askfx/tools/tool_000/policy', { policy: 'ask' })).status).toBe(200);
  const other = await context.newPage();
  await other.goto('/servers/askfx');
  await page.goto('/agents');
  await waitLive(page);
  await waitLive(other);
  await expect(page.getByTestId('upstreams')).toContainText('None');

  const agentRequest = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(agentRequest);
  await agent.connect();
  const list = await agent.post({ jsonrpc: '2.0', id: 9, method: 'tools/list' });
  expect(list.body.result.tools.map((t: { name: string }) => t.name)).toContain('askfx__tool_000');
  const pending = agent.call('askfx__tool_000', { id: '<b>42</b>' });

  for (const p of [page, other]) {
    const card = p.getByTestId('approval-card');
    await expect(card).toBeVisible();
    await expect(card.getByTestId('approval-tool')).toHaveText('tool_000');
    await expect(card.getByTestId('approval-args')).toContainText('"id": "<b>42</b>"');
  }
  await page.getByTestId('approve-call').click();
  const answer = await pending;
  const echoed: string = answer.body.result.content[0].text;
  expect(echoed.startsWith('tool_000 ')).toBe(true);
  expect(JSON.parse(echoed.slice('tool_000 '.length))).toEqual({ id: '<b>42</b>' });
  await expect(page.getByTestId('approval-card')).toHaveCount(0);
  await expect(other.getByTestId('approval-card')).toHaveCount(0);

  // The call is audited, and the server runs for the next call.
  const row = page.getByTestId('call-row').first();
  await expect(row.getByTestId('call-decision')).toContainText('approved by dashboard');
  await expect(row.getByTestId('call-outcome')).toContainText('ok');
  await expect(page.getByTestId('upstream-row')).toHaveCount(1);
  await agentRequest.dispose();
});

test('Try it calls server-everything echo through the endpoint and shows the result', async ({ page }) => {
  await login(page);
  await addVerified(page, 'tryeverything', 'node', [EVERYTHING, 'stdio']);
  await page.goto('/servers/tryeverything');
  const row = page.locator('[data-testid=tool-row][data-tool-name=echo]');
  await expect(row.getByTestId('agent-name')).toHaveText('tryeverything__echo');
  await row.getByTestId('try-link').click();
  await expect(page).toHaveURL(/\/tools\/tryeverything__echo$/);
  await waitLive(page);
  const message = page.getByLabel('message');
  await message.fill('hello <from> playwright');
  await page.getByTestId('try-submit').click();
  await expect(page.getByTestId('try-output')).toContainText('Echo: hello <from> playwright', { timeout: 30_000 });
  // An empty required field is a per-field error, nothing called.
  await message.fill('');
  await page.getByTestId('try-submit').click();
  await expect(page.locator('.field-error')).toContainText('required');
});

test('the preset chosen at confirmation shows on the server page, and Always allow on a card flips the policy on two tabs', async ({ context, playwright }) => {
  const page = await context.newPage();
  await login(page);
  expect((await api(page, 'POST', '/api/v1/servers', { id: 'presetfx', name: 'presetfx', transport: 'stdio', command: FIXTURE, args: ['-tools', '3'] })).status).toBe(201);

  // Confirm the launch with the read-only preset.
  await page.goto('/servers/presetfx/confirm');
  await expect(page.getByTestId('confirm-presets')).toContainText('Switchboard cannot check them');
  await page.getByTestId('preset-read_only').check();
  await page.getByTestId('confirm-button').click();
  await expect(page).toHaveURL(/\/servers\/presetfx$/);
  await expect(page.getByTestId('server-preset')).toContainText('Allow tools that declare themselves read-only and closed-world');
  const rowOf = (p: Page, name: string) => p.locator(`[data-testid=tool-row][data-tool-name=${name}]`);
  const row = (p: Page) => rowOf(p, 'tool_002');
  // A search tool declares itself read-only and closed-world; creating a
  // work item does not.
  await expect(rowOf(page, 'tool_000').getByTestId('policy-reason')).toHaveText('allow: preset read-only (declared read-only and closed-world)', { timeout: 30_000 });
  await expect(row(page).getByTestId('policy-reason')).toHaveText('ask: not declared read-only (preset read-only)');
  await expect(row(page).getByTestId('policy-select')).toHaveValue('ask');

  const other = await context.newPage();
  await other.goto('/servers/presetfx');
  await waitLive(page);
  await waitLive(other);
  await expect(row(other).getByTestId('policy-select')).toHaveValue('ask');

  const agentRequest = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(agentRequest);
  await agent.connect();
  const pending = agent.call('presetfx__tool_002', { title: 'x', priority: 'low' });
  for (const p of [page, other]) {
    await expect(p.getByTestId('approval-card')).toBeVisible();
    await expect(p.getByTestId('always-allow-call')).toBeVisible();
  }
  await other.getByTestId('always-allow-call').click();
  const answer = await pending;
  expect(answer.body.result.content[0].text.startsWith('tool_002 ')).toBe(true);
  for (const p of [page, other]) {
    await expect(p.getByTestId('approval-card')).toHaveCount(0);
    await expect(row(p).getByTestId('policy-select')).toHaveValue('allow');
    await expect(row(p).getByTestId('policy-reason')).toHaveText('set: dashboard (always allow)');
  }
  // The next call needs nobody.
  const next = await agent.call('presetfx__tool_002', { title: 'y', priority: 'low' });
  expect(next.body.result.content[0].text.startsWith('tool_002 ')).toBe(true);
  await agentRequest.dispose();
});

test('a waiting call raises a browser notification while the tab is in the background, once notifications are allowed', async ({ context, playwright }) => {
  // The browser's own notification cannot be seen headless: the page's
  // Notification is replaced by one that records what it is asked to
  // show, and whether the tab is hidden is the test's to say.
  await context.addInitScript(() => {
    const w = window as unknown as { notes: { title: string; body: string }[]; hiddenTab: boolean; Notification: unknown };
    w.notes = [];
    w.hiddenTab = false;
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => w.hiddenTab });
    w.Notification = class {
      static permission = 'default';
      static requestPermission() { (this as unknown as { permission: string }).permission = 'granted'; return Promise.resolve('granted'); }
      constructor(title: string, opts: { body: string }) { w.notes.push({ title, body: opts.body }); }
      close() {}
    };
  });
  const page = await context.newPage();
  await login(page);
  await addVerified(page, 'notefx', FIXTURE, ['-tools', '1']);
  expect((await api(page, 'PUT', '/api/v1/servers/notefx/tools/tool_000/policy', { policy: 'ask' })).status).toBe(200);
  await page.goto('/agents');
  await waitLive(page);
  const notify = page.locator('[data-notify]');
  await expect(notify).toBeVisible();
  await notify.click();
  await expect(notify).toBeHidden();
  await expect(page.getByTestId('notify')).toContainText('Notifications are on for background tabs.');

  const agentRequest = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(agentRequest);
  await agent.connect();
  const notes = () => page.evaluate(() => (window as unknown as { notes: { title: string; body: string }[] }).notes);

  // A card on a visible tab raises none.
  let pending = agent.call('notefx__tool_000', { n: 1 });
  await expect(page.getByTestId('approval-card')).toBeVisible();
  expect(await notes()).toEqual([]);
  await page.getByTestId('deny-call').click();
  await pending;
  await expect(page.getByTestId('approval-card')).toHaveCount(0);

  // In the background: one notification naming the server and the tool.
  await page.evaluate(() => { (window as unknown as { hiddenTab: boolean }).hiddenTab = true; });
  pending = agent.call('notefx__tool_000', { n: 2 });
  await expect.poll(notes).toEqual([{ title: 'A call waits for your approval', body: 'notefx: tool_000' }]);
  await page.getByTestId('approve-call').click();
  await pending;
  await agentRequest.dispose();
});

test('the Agents page copies the URL, and behind a reveal the shared token and each recipe', async ({ context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: `http://127.0.0.1:${PORT}` });
  const page = await context.newPage();
  await login(page);
  await page.goto('/agents');
  // The shared token leads nothing: it is behind a reveal.
  await expect(page.getByTestId('mcp-token')).toBeHidden();
  await page.getByTestId('shared-token').locator('summary').click();
  const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
  for (const [button, source] of [['copy-url', 'mcp-url'], ['copy-token', 'mcp-token'], ['copy-recipe-claude-code', 'recipe-claude-code'], ['copy-recipe-http', 'recipe-http']]) {
    await page.getByTestId(button).click();
    await expect(page.getByTestId(button)).toHaveText('Copied');
    expect(await clipboard()).toBe((await page.getByTestId(source).textContent())!.trim());
  }
  expect(await clipboard()).toContain('"Authorization": "Bearer ');
});

test('a recent call shows its arguments, redacted, once its server records them', async ({ page, playwright }) => {
  await login(page);
  const envSecret = 'env-secret-e2e-4711';
  const created = await api(page, 'POST', '/api/v1/servers', { id: 'argsfx', name: 'argsfx', transport: 'stdio', command: FIXTURE, args: ['-tools', '1'], env: { API_TOKEN: envSecret } });
  expect(created.status).toBe(201);
  expect(created.body.record_arguments).toBe(false);
  const started = await api(page, 'POST', '/api/v1/servers/argsfx/verify', { confirm: true });
  expect(started.status).toBe(202);
  await expect.poll(async () => (await api(page, 'GET', `/api/v1/jobs/${started.body.job.id}`)).body.job.status, { timeout: 30_000 }).toBe('success');
  expect((await api(page, 'PUT', '/api/v1/servers/argsfx/tools/tool_000/policy', { policy: 'allow' })).status).toBe(200);

  // Off by default: the server page offers to turn it on.
  await page.goto('/servers/argsfx');
  const setting = page.getByTestId('record-arguments');
  await expect(setting.getByTestId('record-arguments-state')).toContainText('not recorded');
  await setting.getByTestId('record-arguments-on').click();
  await expect(page).toHaveURL(/\/servers\/argsfx#record-arguments$/);
  await expect(setting.getByTestId('record-arguments-state')).toContainText('recorded');
  await expect(setting.getByTestId('record-arguments-off')).toBeVisible();

  await page.goto('/agents');
  await waitLive(page);
  const agentRequest = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(agentRequest);
  await agent.connect();
  const answer = await agent.call('argsfx__tool_000', { query: '<i>hi</i>', token: 'sk-live-e2e-0815', note: `uses ${envSecret}` });
  expect(answer.body.result.isError).toBeFalsy();

  // The calls table reloads live; the arguments are collapsed until opened.
  const row = page.getByTestId('call-row').first();
  const args = row.getByTestId('call-args');
  await expect(args).toBeVisible();
  await expect(args.locator('pre')).toBeHidden();
  await args.locator('summary').click();
  await expect(args.locator('pre')).toHaveText('{"note":"uses [redacted]","query":"<i>hi</i>","token":"[redacted]"}');
  await expect(row.locator('i')).toHaveCount(0); // shown as text, never as markup
  const html = await page.content();
  expect(html).not.toContain('sk-live-e2e-0815');
  expect(html).not.toContain(envSecret);
  const calls = await api(page, 'GET', '/api/v1/calls?limit=1');
  expect(calls.body.calls[0].arguments).toBe('{"note":"uses [redacted]","query":"<i>hi</i>","token":"[redacted]"}');
  await agentRequest.dispose();
});
