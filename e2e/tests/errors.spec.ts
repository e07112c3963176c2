import { test, expect } from '@playwright/test';
import { addStdioServer, login, verifyConfirming, waitLive } from './helpers';

test('a broken command shows the error class, a suggestion and stderr', async ({ page }) => {
  await login(page);
  await addStdioServer(page, 'broken', 'definitely-not-installed-mcp-server', ['--flag']);
  await waitLive(page);
  await verifyConfirming(page, 'broken', 'definitely-not-installed-mcp-server --flag');
  const panel = page.locator('[data-testid=status-panel]');
  await expect(panel.locator('[data-testid=status]')).toHaveAttribute('data-status', 'failed');
  await expect(panel.locator('[data-testid=verify-error] [data-testid=error-class]')).toHaveText('not_found');
  await expect(panel.locator('[data-testid=error-suggestion]')).toContainText('Install the command');

  const crash = 'crasher';
  await addStdioServer(page, crash, 'sh', ['-c', 'echo "fatal: config file missing" >&2; exit 4']);
  await waitLive(page);
  await verifyConfirming(page, crash, `sh -c 'echo "fatal: config file missing" >&2; exit 4'`);
  await expect(panel.locator('[data-testid=verify-error] [data-testid=error-class]')).toHaveText('exited');
  await expect(panel.locator('[data-testid=error-message]')).toContainText('code 4');
  await expect(panel.locator('[data-testid=stderr-tail]')).toContainText('fatal: config file missing');
});

test('invalid input re-renders the form with a message per field and keeps what was typed', async ({ page }) => {
  await login(page);
  await page.goto('/servers/new');
  await page.fill('#id', 'Not A Slug!');
  await page.fill('#name', 'My server');
  await page.selectOption('#transport', 'stdio');
  await page.fill('#args', 'one\ntwo');
  await page.click('[data-testid=advanced] summary');
  await page.fill('#timeout_s', '0.5');
  await page.click('[data-testid=save-button]');
  await expect(page.locator('[data-testid=form-errors]')).toBeVisible();
  await expect(page.locator('[data-testid=error-id]')).toContainText('lower-case');
  await expect(page.locator('[data-testid=error-command]')).toContainText('required');
  await expect(page.locator('[data-testid=error-timeout_s]')).toContainText('seconds from 1 to 120');
  await expect(page.locator('#timeout_s')).toHaveValue('0.5');
  await expect(page.locator('#id')).toHaveValue('Not A Slug!');
  await expect(page.locator('#name')).toHaveValue('My server');
  await expect(page.locator('#args')).toHaveValue('one\ntwo');

  // A remote server with a link-local URL is refused.
  await page.fill('#id', 'remote-one');
  await page.selectOption('#transport', 'http');
  await page.fill('#url', 'http://169.254.169.254/latest');
  await page.click('[data-testid=save-button]');
  await expect(page.locator('[data-testid=error-url]')).toContainText('Link-local');
  await expect(page.locator('#url')).toHaveValue('http://169.254.169.254/latest');
});

test('edit and delete a server', async ({ page }) => {
  await login(page);
  await addStdioServer(page, 'editme', 'cat', []);
  await page.click('[data-testid=edit-link]');
  await page.fill('#name', 'Edited name');
  await page.fill('#args', '-u');
  await page.click('[data-testid=save-button]');
  await expect(page.locator('[data-testid=server-name]')).toHaveText('Edited name');
  await expect(page.locator('[data-testid=command-line]')).toHaveText('cat -u');

  page.once('dialog', d => d.accept());
  await page.click('[data-testid=delete-button]');
  await expect(page).toHaveURL(/\/\?deleted=editme$/);
  await expect(page.locator('[data-testid=flash]')).toHaveText('Deleted editme');
  await expect(page.locator('[data-testid=server-row][data-server-id="editme"]')).toHaveCount(0);
});
