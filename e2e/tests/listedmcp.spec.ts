import { expect, test } from '@playwright/test';
import { PORT } from '../playwright.config';
import { Agent, EVERYTHING, addVerified, login, waitLive } from './helpers';

// server-everything's prompts and resources, reviewed on its page, used
// by an agent through /mcp: a prompt whose policy a person set to ask
// waits as a card that says what the agent wants, and the person's
// answer lets it through; a templated resource is read under its
// namespaced URI; the Agents page logs both.
test('an agent gets server-everything prompts and reads its resources through /mcp', async ({ page, playwright }) => {
  await login(page);
  const id = 'evlisted';
  await addVerified(page, id, 'node', [EVERYTHING, 'stdio'], { default_policy: 'allow' });

  // Reviewed: args-prompt set to ask on the server page.
  await page.goto(`/servers/${id}`);
  const row = page.getByTestId('prompts-section').getByTestId('prompts-row').filter({ hasText: 'args-prompt' });
  await row.getByTestId('listed-policy-select').selectOption('ask');
  await row.getByRole('button', { name: 'Set' }).click();
  await expect(page.getByTestId('prompts-section').getByTestId('prompts-row').filter({ hasText: 'args-prompt' })
    .getByTestId('listed-policy-select')).toHaveValue('ask');

  await page.goto('/agents');
  await waitLive(page);
  const agentRequest = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(agentRequest);
  await agent.connect();
  const prompts = await agent.post({ jsonrpc: '2.0', id: 3, method: 'prompts/list' });
  expect(prompts.body.result.prompts.map((p: { name: string }) => p.name)).toContain(`${id}__args-prompt`);
  const templates = await agent.post({ jsonrpc: '2.0', id: 4, method: 'resources/templates/list' });
  expect(templates.body.result.resourceTemplates.map((t: { uriTemplate: string }) => t.uriTemplate))
    .toContain(`switchboard://${id}/demo://resource/dynamic/text/{resourceId}`);

  const pending = agent.post({ jsonrpc: '2.0', id: 5, method: 'prompts/get', params: { name: `${id}__args-prompt`, arguments: { city: 'Oslo' } } });
  const card = page.getByTestId('approval-card');
  await expect(card).toBeVisible();
  await expect(card).toContainText('An agent wants to get the prompt');
  await expect(card.getByTestId('approval-tool')).toHaveText('args-prompt');
  await expect(card.getByTestId('approval-args')).toContainText('"city": "Oslo"');
  await page.getByTestId('approve-call').click();
  const got = await pending;
  expect(got.body.result.messages[0].content.text).toBe("What's weather in Oslo?");
  await expect(card).toHaveCount(0);

  const uri = `switchboard://${id}/demo://resource/dynamic/text/3`;
  const read = await agent.post({ jsonrpc: '2.0', id: 6, method: 'resources/read', params: { uri } });
  expect(read.body.result.contents[0].uri).toBe(uri);
  expect(read.body.result.contents[0].text).toMatch(/^Resource 3: /);

  const rows = page.getByTestId('call-row');
  await expect(rows.first().getByTestId('call-method')).toHaveText('resources/read');
  await expect(rows.nth(1).getByTestId('call-method')).toHaveText('prompts/get');
  await expect(rows.nth(1).getByTestId('call-decision')).toContainText('approved by dashboard');
  await agentRequest.dispose();
});
