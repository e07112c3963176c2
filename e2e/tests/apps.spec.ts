import { test, expect } from '@playwright/test';
import * as path from 'node:path';
import { Agent, addVerified, FIXTURE, login } from './helpers';

// Where the screenshot of the app goes.
const SHOTS = process.env.SWITCHBOARD_E2E_SHOTS || '/tmp/switchboard-tryit-shots';

// An MCP App through /mcp, as a client that renders apps (Claude, VS Code,
// ChatGPT) does it: the tool's _meta names its ui:// resource, the client
// reads that resource through /mcp, and shows the page in a sandboxed
// frame. The fixture's -app serves ui://clock/app.html and show_clock;
// Switchboard offers them as ui://appfx/clock/app.html and appfx__show_clock.
test('an MCP App: the tool names its ui:// resource, read through /mcp and rendered', async ({ page, request }) => {
  await login(page);
  await addVerified(page, 'appfx', FIXTURE, ['-app', '-tools', '0'], { default_policy: 'allow' });

  const agent = new Agent(request);
  await agent.connect();
  const list = await agent.post({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} });
  expect(list.status).toBe(200);
  const tool = list.body.result.tools.find((t: { name: string }) => t.name === 'appfx__show_clock');
  expect(tool, 'appfx__show_clock is offered').toBeTruthy();
  const uri = tool._meta.ui.resourceUri;
  expect(uri).toBe('ui://appfx/clock/app.html');

  const read = await agent.post({ jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri } });
  expect(read.status).toBe(200);
  const [page0] = read.body.result.contents;
  expect(page0.uri).toBe(uri);
  expect(page0.mimeType).toBe('text/html;profile=mcp-app');

  // The host's frame: sandboxed (an origin of its own), the page as the
  // server wrote it.
  await page.setContent('<main><h2>Host</h2><iframe id="app" sandbox="allow-scripts" style="width:100%;height:200px"></iframe></main>');
  await page.locator('#app').evaluate((frame: HTMLIFrameElement, html: string) => { frame.srcdoc = html; }, page0.text);
  await expect(page.frameLocator('#app').locator('#clock')).toHaveText('Clock app');
  await page.screenshot({ path: path.join(SHOTS, 'mcp-app.png') });
});
