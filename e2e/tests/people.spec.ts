import { expect, test, type Browser, type Page } from '@playwright/test';
import { PORT } from '../playwright.config';
import { Agent, FIXTURE, addVerified, api, login, shoot, waitLive } from './helpers';

// Issue 38: people and roles. The admin (the shared token's holder) adds
// an approver and a viewer on the People page, each with a personal token
// shown once; they sign in with it. The viewer reads and is told why a
// change is refused; the approver answers a waiting call, which then
// names them.

// signInAs opens a browser context of its own, signed in with token.
async function signInAs(browser: Browser, token: string): Promise<Page> {
  const ctx = await browser.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const page = await ctx.newPage();
  await page.goto('/login');
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await expect(page).toHaveURL(/\/$/);
  return page;
}

test('an admin adds an approver and a viewer; each signs in and can do what the role allows', async ({ page, browser, playwright }) => {
  const errors: string[] = [];
  await login(page);
  await addVerified(page, 'peoplefx', FIXTURE, ['-tools', '2']);
  expect((await api(page, 'PUT', '/api/v1/servers/peoplefx/tools/tool_000/policy', { policy: 'ask' })).status).toBe(200);

  // The People page adds each, the token shown once.
  const tokens: Record<string, string> = {};
  for (const [email, role] of [['ada@example.com', 'approver'], ['vic@example.com', 'viewer']]) {
    await page.goto('/people');
    await page.fill('#person-email', email);
    await page.selectOption('#person-role', role);
    await page.getByTestId('add-person').click();
    const shown = page.getByTestId('new-person-token');
    await expect(shown).toContainText(email);
    tokens[role] = (await shown.getByTestId('new-token').textContent())!.trim();
    expect(tokens[role]).toMatch(/^sbu_[0-9a-f]{64}$/);
    await expect(page.locator(`[data-testid=person][data-email="${email}"]`)).toHaveAttribute('data-role', role);
  }
  // A bad email is refused on its field, the input kept.
  await page.fill('#person-email', 'not an email');
  await page.evaluate(() => document.querySelector('#person-email')!.setAttribute('type', 'text')); // past the browser's own check
  await page.getByTestId('add-person').click();
  await expect(page.getByTestId('email-error')).toContainText('an email address');
  await expect(page.locator('#person-email')).toHaveValue('not an email');
  await page.goto('/people');
  await shoot(page, 'people-page');

  // The viewer reads: what the role may not change is shown read only,
  // and what it may not do is not offered; a change forced through
  // anyway is refused with the reason shown.
  const viewer = await signInAs(browser, tokens.viewer);
  viewer.on('console', m => { if (m.type() === 'error' && !m.text().includes('403')) errors.push(m.text()); });
  await expect(viewer.getByTestId('viewer-note')).toBeVisible();
  await expect(viewer.getByTestId('add-server')).toBeHidden();
  await viewer.goto('/servers/peoplefx');
  await waitLive(viewer);
  const row = viewer.locator('[data-testid=tool-row][data-tool-name=tool_001]');
  await expect(row.getByTestId('policy-select')).toBeDisabled();
  await expect(row.getByTestId('policy-select')).toBeVisible();
  await expect(viewer.getByTestId('edit-link')).toBeHidden();
  await expect(viewer.getByTestId('verify-button')).toBeHidden();
  await expect(viewer.getByTestId('danger-zone')).toBeHidden();
  await expect(viewer.getByTestId('ask-sampling')).toBeDisabled();
  await expect(viewer.getByTestId('save-asks')).toBeHidden();
  await shoot(viewer, 'people-viewer-server');
  await row.getByTestId('policy-select').evaluate((el: HTMLSelectElement) => { el.disabled = false; });
  await row.getByTestId('policy-select').selectOption('deny');
  await expect(viewer.getByTestId('request-error')).toContainText('this needs the approver role; you are viewer');
  expect((await api(page, 'GET', '/api/v1/servers/peoplefx/tools/tool_001')).body.tool.policy).not.toBe('deny');
  await viewer.goto('/people');
  await expect(viewer.locator('body')).toContainText('this needs the admin role; you are viewer');
  await viewer.goto('/agents');
  await expect(viewer.getByTestId('shared-token-hidden')).toBeVisible();
  await shoot(viewer, 'people-viewer-agents');

  // The approver answers a waiting call on the dashboard; it names her.
  const approver = await signInAs(browser, tokens.approver);
  approver.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  await approver.goto('/agents');
  await waitLive(approver);
  const agentRequest = await playwright.request.newContext({ baseURL: `http://127.0.0.1:${PORT}` });
  const agent = new Agent(agentRequest);
  await agent.connect();
  const pending = agent.call('peoplefx__tool_000', { who: 'ada' });
  const card = approver.getByTestId('approval-card');
  await expect(card).toBeVisible();
  await approver.getByTestId('approve-call').click();
  const answer = await pending;
  expect(answer.body.result.isError).toBeFalsy();
  await expect(approver.getByTestId('call-row').first().getByTestId('call-decision')).toContainText('ada@example.com');
  expect(errors).toEqual([]);
  await agentRequest.dispose();
});
