import { test, expect } from '@playwright/test';
import * as path from 'node:path';
import { addVerified, FIXTURE, login, waitLive } from './helpers';

// Where the screenshots of the question go.
const SHOTS = process.env.SWITCHBOARD_E2E_SHOTS || '/tmp/switchboard-tryit-shots';

// What a server asks during a Try it call (here, a model's message:
// sampling/createMessage) is asked of the person on the page, live; the
// person's reply is the model's, and the tool's result comes back.
test('Try it: the person answers a sampling request of the server', async ({ page }) => {
  await login(page);
  await addVerified(page, 'questionfx', FIXTURE, ['-mode', 'asks', '-tools', '0'], { default_policy: 'allow' });
  for (const [width, scheme] of [[1280, 'light'], [390, 'dark']] as const) {
    await page.setViewportSize({ width, height: 900 });
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto('/tools/questionfx__ask_model');
    await waitLive(page);
    await page.getByLabel('prompt').fill('tell me a <joke>');
    await page.getByTestId('try-submit').click();
    const question = page.getByTestId('try-question');
    await expect(question).toHaveAttribute('data-kind', 'sampling');
    await expect(question.getByTestId('try-question-message')).toHaveText('tell me a <joke>');
    await question.screenshot({ path: path.join(SHOTS, `tryit-sampling-${width}-${scheme}.png`) });
    await page.getByTestId('try-answer-model').fill('a person');
    await page.getByTestId('try-answer-reply').fill('Why did the <gopher> cross the road?');
    await page.getByTestId('try-answer-accept').click();
    await expect(page.getByTestId('try-result')).toContainText('a person: Why did the <gopher> cross the road?');
    await expect(page.getByTestId('try-question')).toHaveCount(0);
  }
});
