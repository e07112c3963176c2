import { expect, test } from '@playwright/test';
import { REGISTRY } from '../playwright.config';
import { api, login, shoot, waitLive } from './helpers';

// Issue 39: browse the registry's copy, search it, add a server in one
// step (its required secret asked for, refused when missing), on to the
// confirmation of its launch, pinned.
test('a person browses the registry and adds a server', async ({ page }) => {
  await login(page);
  expect((await api(page, 'POST', '/api/v1/registry/refresh')).status).toBe(200);
  await page.getByTestId('nav-registry').click();
  await expect(page).toHaveURL(/\/registry$/);
  await expect(page.getByTestId('registry-copy')).toContainText(REGISTRY);
  await expect(page.getByTestId('registry-server')).toHaveCount(30);
  await expect(page.getByTestId('registry-next')).toBeVisible();
  await shoot(page, 'registry');

  await page.fill('#registry-q', 'ledger');
  await page.getByRole('button', { name: 'Search' }).click();
  const ledger = page.locator('[data-testid=registry-server][data-name="io.github.switchboard-test/ledger"]');
  await expect(ledger).toBeVisible();
  await ledger.getByTestId('registry-add').click();
  await expect(page.getByTestId('registry-runs')).toContainText('npm ledger-mcp-server, pinned to version 1.7.2');
  await page.getByTestId('registry-add-submit').click();
  await expect(page.getByTestId('field-error-env.LEDGER_API_KEY')).toContainText('Required');
  await shoot(page, 'registry-add');
  await page.fill('[name="env.LEDGER_API_KEY"]', 'pat-e2e-secret');
  await page.getByTestId('registry-add-submit').click();
  await expect(page).toHaveURL(/\/servers\/ledger\/confirm$/);
  await expect(page.locator('body')).toContainText('ledger-mcp-server@1.7.2');
  await expect(page.locator('body')).not.toContainText('pat-e2e-secret');

  await page.goto('/registry?search=ledger');
  await waitLive(page);
  await expect(page.getByTestId('registry-added')).toHaveText('added as ledger');
});
