import { expect, test } from '@playwright/test';
import { FIXTURE, api, login } from './helpers';

// A Claude Desktop config as people have one: comments are not allowed
// in it, but odd spacing and unicode are.
const config = `{
  "mcpServers": {
    "Fixture Tools ✓": {
      "command": "${FIXTURE}",
      "args": ["-tools", "3"],
      "env":   { "FIXTURE_API_KEY": "sk-test-0123456789abcdefghijklmnop" }
    },
    "remote-docs": { "url": "https://docs.example.com/mcp" }
  }
}`;

test('paste a Claude Desktop config, review the dry run, import, and find the servers waiting for confirmation', async ({ page }) => {
  await login(page);
  await page.getByTestId('nav-import').click();
  await expect(page).toHaveURL(/\/import$/);
  await page.getByTestId('import-text').fill(config);
  await page.getByTestId('import-preview').click();

  const rows = page.getByTestId('import-row');
  await expect(rows).toHaveCount(2);
  await expect(page.getByTestId('import-summary')).toContainText('2 to add');
  const fixtureRow = rows.filter({ hasText: 'Fixture Tools ✓' });
  await expect(fixtureRow.getByTestId('import-id')).toHaveText('fixture-tools');
  await expect(fixtureRow.getByTestId('import-action')).toHaveText('add');
  await expect(fixtureRow.getByTestId('import-secret')).toContainText('env.FIXTURE_API_KEY looks like a secret');
  await expect(rows.filter({ hasText: 'remote-docs' }).getByTestId('import-id')).toHaveText('remote-docs');
  // Nothing is stored by the dry run.
  expect((await api(page, 'GET', '/api/v1/servers/fixture-tools')).status).toBe(404);

  // Other tests share this Switchboard: count the launches already waiting.
  const waiting = (await api(page, 'GET', '/api/v1/launches')).body.launches.length;
  await page.getByTestId('import-apply').click();
  // The servers added wait for the confirmation of their launches, on one page.
  await expect(page).toHaveURL(/\/launches\/confirm\?imported=2\.0\.0&server=fixture-tools&server=remote-docs$/);
  await expect(page.getByTestId('flash')).toContainText('2 added');
  await expect(page.getByTestId('batch-launch')).toHaveCount(2);
  await expect(page.locator('[data-testid=batch-launch][data-server-id=remote-docs] [data-testid=confirm-url]')).toHaveText('https://docs.example.com/mcp');
  await page.getByTestId('confirm-launches-cancel').click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('confirm-launches-link')).toHaveText(`Confirm ${waiting + 2} launches`);
  for (const id of ['fixture-tools', 'remote-docs']) {
    const row = page.locator(`[data-testid=server-row][data-server-id=${id}]`);
    await expect(row).toHaveCount(1);
    // Not verified: its Verify leads to the confirmation of its command.
    await expect(row.getByTestId('verify-button')).toHaveText('Review and verify');
  }
  // The secret is stored masked.
  await page.goto('/servers/fixture-tools');
  await expect(page.locator('body')).not.toContainText('sk-test-0123456789abcdefghijklmnop');
});
