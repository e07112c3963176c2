import { expect, test } from '@playwright/test';
import { EVERYTHING, api, login } from './helpers';

// server-everything declares resources and prompts: once verified, its
// server page lists them in their own sections, and a prompt's policy
// form saves.
test('verifying server-everything shows its resources, templates and prompts', async ({ page }) => {
  await login(page);
  const id = 'resevery';
  const created = await api(page, 'POST', '/api/v1/servers', { id, name: id, transport: 'stdio', command: 'node', args: [EVERYTHING, 'stdio'] });
  expect(created.status).toBe(201);
  const started = await api(page, 'POST', `/api/v1/servers/${id}/verify`, { confirm: true });
  expect(started.status).toBe(202);
  await expect.poll(async () => (await api(page, 'GET', `/api/v1/jobs/${started.body.job.id}`)).body.job.status,
    { timeout: 30_000 }).toBe('success');

  await page.goto(`/servers/${id}`);
  const prompts = page.getByTestId('prompts-section');
  await expect(prompts).toBeVisible();
  await expect(prompts.getByTestId('prompts-row').filter({ hasText: 'simple-prompt' })).toHaveCount(1);
  const args = prompts.getByTestId('prompts-row').filter({ hasText: 'args-prompt' });
  await expect(args.getByTestId('prompt-arguments')).toBeVisible();
  await expect(page.getByTestId('resources-section')).toContainText('demo://resource/static/document/');
  await expect(page.getByTestId('resource-templates-section')).toContainText('demo://resource/dynamic/text/{resourceId}');

  const row = prompts.getByTestId('prompts-row').filter({ hasText: 'simple-prompt' });
  await row.getByTestId('listed-policy-select').selectOption('deny');
  await row.getByRole('button', { name: 'Set' }).click();
  await expect(page.getByTestId('prompts-section').getByTestId('prompts-row').filter({ hasText: 'simple-prompt' })
    .getByTestId('listed-policy-select')).toHaveValue('deny');
  const answer = await api(page, 'GET', `/api/v1/servers/${id}/prompts`);
  expect(answer.body.prompts.find((p: { name: string }) => p.name === 'simple-prompt').policy).toBe('deny');
});
