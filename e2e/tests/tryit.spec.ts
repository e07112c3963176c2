import { test, expect, type Page } from '@playwright/test';
import { addVerified as addAllowed, api, clickWhenWired, EVERYTHING, FIXTURE, login, waitLive } from './helpers';

// Where the screenshots of the Try it page go.
const SHOTS = process.env.SWITCHBOARD_E2E_SHOTS || '/tmp/switchboard-tryit-shots';

// addVerified with every tool allowed.
function addVerified(page: Page, id: string, command: string, args: string[]) {
  return addAllowed(page, id, command, args, { default_policy: 'allow' });
}

// cspErrors collects what the browser's console says went wrong: what the
// CSP blocked, a script's error, a request that failed.
function cspErrors(page: Page): string[] {
  const seen: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') { seen.push(m.text()); }
  });
  page.on('pageerror', (e) => seen.push(String(e)));
  return seen;
}

test('Try it: an array of objects edited as rows, live progress, the JSON result copied', async ({ context, page }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const blocked = cspErrors(page);
  await login(page);
  await addVerified(page, 'tryfx', FIXTURE, ['-mode', 'try-it', '-tools', '0']);

  await page.goto('/tools/tryfx__plan_trip');
  await waitLive(page);
  await page.getByLabel('traveller').fill('Ann <the traveller>');
  // The required array starts with one row; a second is added, a third
  // added and removed.
  const stops = page.getByTestId('try-rows-f1');
  const rows = stops.locator(':scope > [data-testid=try-row-f1]');
  await expect(rows).toHaveCount(1);
  const fillRow = async (i: number, city: string, nights: string, by: string) => {
    const row = rows.nth(i);
    await row.getByLabel('city').fill(city);
    await row.getByLabel('nights').fill(nights);
    await row.getByLabel('by').selectOption({ label: by });
  };
  await fillRow(0, 'Oslo', '2', 'train');
  await page.getByTestId('try-add-f1').click();
  await fillRow(1, 'Bergen', '3', 'plane');
  await rows.nth(1).getByLabel('booked').selectOption('true');
  await page.getByTestId('try-add-f1').click();
  await fillRow(2, 'Nowhere', '1', 'bus');
  await expect(rows).toHaveCount(3);
  await rows.nth(2).getByTestId('try-remove-row').click();
  await expect(rows).toHaveCount(2);
  await page.getByTestId('try-add-f6').click();
  await page.getByTestId('try-rows-f6').locator('input[type=text]').last().fill('fjords');

  // A value the schema refuses is an error on that row's field; the rows stay.
  await rows.nth(1).getByLabel('nights').fill('40');
  await page.getByTestId('try-submit').click();
  await expect(page.locator('[data-testid^=try-error-f3-]')).toContainText('maximum');
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(1).getByLabel('city')).toHaveValue('Bergen');
  await rows.nth(1).getByLabel('nights').fill('3');
  await page.getByTestId('try-submit').click();

  const json = page.getByTestId('try-json');
  await expect(json).toContainText('"city": "Bergen"');
  const want = {
    traveller: 'Ann <the traveller>',
    stops: [{ city: 'Oslo', nights: 2, by: 'train' }, { city: 'Bergen', nights: 3, by: 'plane', booked: true }],
    tags: ['fjords'],
  };
  expect(JSON.parse((await json.textContent()) || '')).toEqual(want);
  await page.getByTestId('try-json-copy').click();
  await expect(page.getByTestId('try-json-copy')).toHaveText('Copied');
  expect(JSON.parse(await page.evaluate(() => navigator.clipboard.readText()))).toEqual(want);
  await page.screenshot({ path: `${SHOTS}/tryit-rows.png`, fullPage: true });

  // Progress: each notification shows while the call runs.
  await page.goto('/tools/tryfx__slow_steps');
  await waitLive(page);
  await page.getByLabel('steps').fill('5');
  await page.getByLabel('delay_ms').fill('500');
  await page.getByTestId('try-submit').click();
  const live = page.getByTestId('try-live');
  await expect(page.getByTestId('try-cancel')).toBeVisible();
  await expect(live.getByTestId('try-progress-summary')).toHaveText('2 of 5', { timeout: 10_000 });
  await expect(live.getByTestId('try-progress-message')).toHaveText('step 2 of 5 <done>');
  await expect(page.getByTestId('try-result')).toHaveCount(0); // still running
  await expect(page.getByTestId('try-text')).toHaveText('done after 5 steps', { timeout: 10_000 });
  await expect(page.getByTestId('try-result-progress')).toContainText('5 of 5');
  await expect(page.getByTestId('try-cancel')).toBeHidden();

  // Cancel stops a call that is running.
  await page.getByLabel('delay_ms').fill('3000');
  await page.getByTestId('try-submit').click();
  await expect(page.getByTestId('try-cancel')).toBeVisible();
  await page.getByTestId('try-cancel').click();
  await expect(page.getByTestId('try-cancelled')).toBeVisible();
  await expect(page.getByTestId('try-submit')).toBeEnabled();
  expect(blocked).toEqual([]);
});

test('Try it shows the image of a real server, allowed by the CSP', async ({ page }) => {
  const blocked = cspErrors(page);
  await login(page);
  await addVerified(page, 'evtry', 'node', [EVERYTHING, 'stdio']);
  await page.goto('/tools/evtry__get-tiny-image');
  await waitLive(page);
  await page.getByTestId('try-submit').click();
  const img = page.getByTestId('try-image');
  await expect(img).toBeVisible({ timeout: 30_000 });
  await expect(img).toHaveAttribute('src', /^data:image\/png;base64,/);
  await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth)).toBeGreaterThan(0);
  await expect(page.getByTestId('try-text').first()).toContainText("Here's the image you requested");

  // The fixture's image and sound, and its hostile media as notes.
  await addVerified(page, 'mediafx', FIXTURE, ['-mode', 'try-it', '-tools', '0']);
  await page.goto('/tools/mediafx__media');
  await waitLive(page);
  await page.getByTestId('try-submit').click();
  await expect(page.getByTestId('try-audio')).toHaveAttribute('src', /^data:audio\/wav;base64,/);
  const card = page.getByTestId('try-image');
  await expect.poll(() => card.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth)).toBe(64);
  await page.getByTestId('try-result').locator('summary').click();
  await page.screenshot({ path: `${SHOTS}/tryit-media.png`, fullPage: true });

  await page.goto('/tools/mediafx__hostile_media');
  await page.getByTestId('try-submit').click();
  await expect(page.getByTestId('try-refused')).toHaveCount(5);
  await expect(page.locator('[data-testid=try-output] img, [data-testid=try-output] audio')).toHaveCount(0);
  expect(blocked).toEqual([]);
});

test('Verify all: Cancel stops its verifications, Dismiss puts the panel away while they go on', async ({ page }) => {
  await login(page);
  for (const id of ['slowa', 'slowb']) {
    expect((await api(page, 'POST', '/api/v1/servers', { id, name: id, transport: 'stdio', command: FIXTURE, args: ['-tools', '1', '-startup-delay', '4s'] })).status).toBe(201);
    // A Verify confirms the launch; let it finish.
    const started = await api(page, 'POST', `/api/v1/servers/${id}/verify`, { confirm: true });
    await expect.poll(async () => (await api(page, 'GET', `/api/v1/jobs/${started.body.job.id}`)).body.job.status,
      { timeout: 30_000 }).toBe('success');
  }
  await page.goto('/');
  await waitLive(page);
  await page.getByTestId('verify-all-button').click();
  const panel = page.getByTestId('verify-all-progress');
  await expect(panel).toBeVisible();
  await expect(panel.getByTestId('verify-all-cancel')).toBeVisible();
  await clickWhenWired(panel.getByTestId('verify-all-cancel'));
  await expect(panel.getByTestId('verify-all-cancelled')).toContainText('cancelled');
  await expect(panel).toHaveAttribute('data-done', 'true');
  await expect(panel.getByTestId('verify-all-cancel')).toHaveCount(0);
  await clickWhenWired(panel.getByTestId('verify-all-dismiss'));
  await expect(panel).toHaveCount(0);

  // A new Verify all shows again; dismissed while it runs, its
  // verifications go on to the end.
  await page.getByTestId('verify-all-button').click();
  await expect(panel).toBeVisible();
  await clickWhenWired(panel.getByTestId('verify-all-dismiss'));
  await expect(panel).toHaveCount(0);
  await expect(page.locator('[data-server-id=slowa] [data-testid=status]')).toHaveAttribute('data-status', 'running', { timeout: 15_000 });
  await expect(page.locator('[data-server-id=slowa] [data-testid=status]')).toHaveAttribute('data-status', 'success', { timeout: 30_000 });
  await expect(page.locator('[data-server-id=slowb] [data-testid=status]')).toHaveAttribute('data-status', 'success', { timeout: 30_000 });
  await page.reload();
  await expect(panel).toHaveCount(0);
});
