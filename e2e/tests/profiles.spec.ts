import { expect, test } from '@playwright/test';
import { PORT } from '../playwright.config';
import { Agent, FIXTURE, api, login } from './helpers';

// A profile made in the page, a client token made with it, its preview,
// and what the agent with that token is offered.
test('a profile made in the page is what its client agent sees', async ({ page, playwright }) => {
  const n = Date.now().toString(36);
  const [a, b, profile] = [`pfa${n}`, `pfb${n}`, `only-b-${n}`];
  await login(page);
  for (const id of [a, b]) {
    expect((await api(page, 'POST', '/api/v1/servers', { id, name: id, transport: 'stdio', command: FIXTURE, args: ['-tools', '2'] })).status).toBe(201);
    const started = await api(page, 'POST', `/api/v1/servers/${id}/verify`, { confirm: true });
    expect(started.status).toBe(202);
    await expect.poll(async () => (await api(page, 'GET', `/api/v1/jobs/${started.body.job.id}`)).body.job.status,
      { timeout: 30_000 }).toBe('success');
  }

  await page.goto('/agents');
  await page.getByTestId('nav-profiles').click();
  await expect(page).toHaveURL(/\/profiles$/);
  await page.getByTestId('new-profile').click();
  await page.fill('#id', profile);
  await page.fill('#name', `Only ${b}`);
  await page.getByTestId('profile-mode').selectOption('servers');
  await page.getByTestId('profile-servers').locator(`input[value="${b}"]`).check();
  await page.getByTestId('save-profile').click();
  await expect(page).toHaveURL(new RegExp(`/profiles/${profile}$`));
  const preview = page.getByTestId('profile-preview');
  await expect(preview.getByTestId('preview-agent-name')).toHaveText([`${b}__tool_000`, `${b}__tool_001`]);

  await page.goto('/agents');
  await page.fill('#client-name', 'Profiled agent');
  await page.getByTestId('client-profile').selectOption(profile);
  await page.getByTestId('new-client-form').getByRole('button', { name: 'Make a token' }).click();
  const token = (await page.getByTestId('new-token').textContent())!.trim();
  expect(token.startsWith('sbc_')).toBe(true);
  await expect(page.locator('[data-testid=connected-client]', { hasText: 'Profiled agent' }).getByTestId('client-profile-name')).toHaveText(profile);

  const request = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(request, token);
  await agent.connect();
  const list = await agent.post({ jsonrpc: '2.0', id: 9, method: 'tools/list' });
  expect(list.body.result.tools.map((t: { name: string }) => t.name).sort()).toEqual([`${b}__tool_000`, `${b}__tool_001`]);
  const refused = await agent.call(`${a}__tool_000`, {});
  expect(JSON.stringify(refused.body)).toContain(`no tool is offered as \\"${a}__tool_000\\"`);

  // The endpoint's own token still sees both servers.
  const all = new Agent(request);
  await all.connect();
  const names = (await all.post({ jsonrpc: '2.0', id: 9, method: 'tools/list' })).body.result.tools.map((t: { name: string }) => t.name);
  expect(names).toEqual(expect.arrayContaining([`${a}__tool_000`, `${b}__tool_000`]));
  await request.dispose();

  // Deleting asks first, and is refused while the client's token belongs
  // to the profile; once it is revoked, the profile goes.
  const row = () => page.locator(`[data-testid=profile-row][data-profile="${profile}"]`);
  await page.goto('/profiles');
  page.once('dialog', d => d.accept());
  await row().getByTestId('delete-profile').click();
  await expect(page.locator('body')).toContainText('revoke them (Agents) before deleting it');
  await page.goto('/agents');
  page.once('dialog', d => d.accept());
  await page.locator('[data-testid=connected-client]', { hasText: 'Profiled agent' }).getByTestId('revoke-client').click();
  await expect(page.locator('[data-testid=connected-client]', { hasText: 'Profiled agent' })).toHaveCount(0);
  await page.goto('/profiles');
  page.once('dialog', d => d.accept());
  await row().getByTestId('delete-profile').click();
  await expect(page).toHaveURL(/\/profiles$/);
  await expect(row()).toHaveCount(0);
});

// Search mode set in the page: the preview says what the agent is
// listed, and the agent with a token of the profile sees search_tools,
// call_tool and the pinned tool, and calls another through call_tool.
test('a search-mode profile lists search_tools, call_tool and its pinned tool', async ({ page, playwright }) => {
  const n = Date.now().toString(36);
  const [s, profile] = [`pfs${n}`, `search-${n}`];
  await login(page);
  expect((await api(page, 'POST', '/api/v1/servers', { id: s, name: s, transport: 'stdio', command: FIXTURE, args: ['-tools', '3'] })).status).toBe(201);
  const started = await api(page, 'POST', `/api/v1/servers/${s}/verify`, { confirm: true });
  expect(started.status).toBe(202);
  await expect.poll(async () => (await api(page, 'GET', `/api/v1/jobs/${started.body.job.id}`)).body.job.status,
    { timeout: 30_000 }).toBe('success');
  expect((await api(page, 'PUT', `/api/v1/servers/${s}/tools/tool_001/policy`, { policy: 'allow' })).status).toBe(200);

  await page.goto('/profiles/new');
  await page.fill('#id', profile);
  await page.fill('#name', `Search ${s}`);
  await page.getByTestId('profile-mode').selectOption('servers');
  await page.getByTestId('profile-servers').locator(`input[value="${s}"]`).check();
  await page.getByTestId('profile-search').check();
  const tool = page.locator(`[data-testid=profile-tool][data-tool="${s} tool_000"]`);
  await page.locator('details.profile-server', { has: tool }).locator('summary').click();
  await tool.getByTestId('profile-pin').check();
  await page.getByTestId('save-profile').click();
  await expect(page).toHaveURL(new RegExp(`/profiles/${profile}$`));
  await expect(page.getByTestId('profile-preview-search')).toContainText(`search_tools and call_tool, and the pinned ${s}__tool_000`);
  await expect(page.getByTestId('preview-pinned')).toHaveCount(1);

  await page.goto('/agents');
  await page.fill('#client-name', 'Searching agent');
  await page.getByTestId('client-profile').selectOption(profile);
  await page.getByTestId('new-client-form').getByRole('button', { name: 'Make a token' }).click();
  const token = (await page.getByTestId('new-token').textContent())!.trim();

  const request = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(request, token);
  await agent.connect();
  const list = await agent.post({ jsonrpc: '2.0', id: 9, method: 'tools/list' });
  expect(list.body.result.tools.map((t: { name: string }) => t.name).sort()).toEqual(['call_tool', `${s}__tool_000`, 'search_tools']);
  const found = await agent.call('search_tools', { query: 'xyzzy plugh' });
  expect(found.body.result.structuredContent).toEqual({ tools: [] });
  const called = await agent.call('call_tool', { name: `${s}__tool_001`, arguments: {} });
  expect(called.body.result.isError ?? false).toBe(false);
  await request.dispose();
});
