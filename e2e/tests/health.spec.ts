import { expect, test } from '@playwright/test';
import { type ChildProcess } from 'node:child_process';
import { FIXTURE, api, login, started, waitLive } from './helpers';

// A dead remote looks dead (issue 21, item 2): a verified Streamable HTTP
// server is killed, and its one health chip turns from "OK · N tools" to
// "Unreachable since …" within the held session's ping interval (30 s),
// live, on the list and on its page, never "success · fresh".
test('a killed remote shows Unreachable, live, on the list and its page', async ({ page, context }) => {
  test.setTimeout(90_000);
  const procs: ChildProcess[] = [];
  const url = await started(procs, FIXTURE, ['-transport', 'http', '-addr', '127.0.0.1:0', '-tools', '3']);
  await login(page);
  expect((await api(page, 'POST', '/api/v1/servers', { id: 'remote', name: 'remote', transport: 'http', url })).status).toBe(201);
  const job = await api(page, 'POST', '/api/v1/servers/remote/verify', { confirm: true });
  expect(job.status).toBe(202);
  await expect.poll(async () => (await api(page, 'GET', `/api/v1/jobs/${job.body.job.id}`)).body.job.status, { timeout: 30_000 }).toBe('success');
  await expect.poll(async () => (await api(page, 'GET', '/api/v1/servers/remote')).body.discovery?.watch?.connected, { timeout: 30_000 }).toBe(true);

  const detail = await context.newPage();
  await page.goto('/');
  await detail.goto('/servers/remote');
  await waitLive(page);
  await waitLive(detail);
  const rowChip = page.locator('[data-testid=server-row][data-server-id="remote"] [data-testid=status]');
  const pageChip = detail.locator('[data-testid=status-panel] [data-testid=status]');
  await expect(rowChip).toHaveText('OK · 3 tools');
  await expect(pageChip).toHaveText('OK · 3 tools');

  const killedAt = Date.now();
  process.kill(-procs[0].pid!, 'SIGKILL');
  await expect(rowChip).toHaveText(/^Unreachable since \d\d:\d\d UTC$/, { timeout: 35_000 });
  await expect(rowChip).toHaveAttribute('data-health', 'unreachable');
  await expect(pageChip).toHaveText(/^Unreachable since /, { timeout: 5_000 });
  expect(Date.now() - killedAt).toBeLessThan(35_000);
  await expect(page.locator('[data-testid=server-row][data-server-id="remote"]')).not.toContainText(/success|fresh/);
  await detail.screenshot({ path: 'test-results/health-unreachable.png' });
});
