import { defineConfig } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// One Switchboard for the whole run, built by `make build`, on its own
// port (SWITCHBOARD_E2E_PORT, default 7431) with a fresh database.
export const PORT = Number(process.env.SWITCHBOARD_E2E_PORT || 7431);
// The registry fixture's port: the dashboard's, plus 68.
export const REGISTRY_PORT = PORT + 68;
export const REGISTRY = `http://127.0.0.1:${REGISTRY_PORT}`;
// Set once in the main process; worker processes inherit the environment.
process.env.SWITCHBOARD_E2E_TOKEN ||= 'e2e-' + Math.random().toString(36).slice(2);
process.env.SWITCHBOARD_E2E_DIR ||= fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-e2e-'));
process.env.SWITCHBOARD_E2E_MCP_TOKEN ||= 'e2e-mcp-' + Math.random().toString(36).slice(2);
export const TOKEN = process.env.SWITCHBOARD_E2E_TOKEN;
export const MCP_TOKEN = process.env.SWITCHBOARD_E2E_MCP_TOKEN;
const dataDir = process.env.SWITCHBOARD_E2E_DIR;

export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 15_000 },
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    launchOptions: {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
  },
  webServer: [{
    // An MCP Registry of the tests' own (cmd/registry-fixture), which the
    // dashboard browses.
    command: `../bin/registry-fixture -addr 127.0.0.1:${REGISTRY_PORT}`,
    url: `http://127.0.0.1:${REGISTRY_PORT}/v0.1/servers?limit=1`,
    reuseExistingServer: false,
    stdout: 'ignore',
  }, {
    command: '../bin/switchboard',
    url: `http://127.0.0.1:${PORT}/healthz`,
    reuseExistingServer: false,
    stdout: 'pipe',
    env: {
      SWITCHBOARD_ADDR: `127.0.0.1:${PORT}`,
      SWITCHBOARD_DB: path.join(dataDir, 'switchboard.db'),
      SWITCHBOARD_TOKEN: TOKEN,
      SWITCHBOARD_MCP_TOKEN: MCP_TOKEN,
      PATH: process.env.PATH || '/usr/bin:/bin',
      HOME: process.env.HOME || dataDir,
      SWITCHBOARD_REGISTRY: REGISTRY,
    },
  }],
});
