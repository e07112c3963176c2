#!/usr/bin/env node
// waiting-agent.mjs is an MCP agent built on the official TypeScript
// SDK's v2 client (@modelcontextprotocol/client) that calls one tool with
// a progressToken and reports what it heard while the call waited, for
// the Go tests of a call that waits for a person's approval:
//
//   node waiting-agent.mjs MCP-URL BEARER-TOKEN TOOL
//
// It speaks 2025-11-25 and declares nothing (no elicitation: the person
// is asked on the dashboard), keeps the SDK's default request timeout,
// and prints one JSON object on stdout: the progress notifications heard
// (token and message), and the call's result text, isError or error.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, token, tool] = process.argv.slice(2);
if (!url || !token || !tool) {
  console.error('usage: waiting-agent.mjs MCP-URL BEARER-TOKEN TOOL');
  process.exit(2);
}
const PROGRESS_TOKEN = 'waiting-agent-progress';
const client = new Client({ name: 'waiting-agent', version: '1.0.0' }, { capabilities: {} });
const progress = [];
client.setNotificationHandler('notifications/progress', (n) => {
  progress.push({ token: n.params.progressToken, progress: n.params.progress, message: n.params.message ?? '' });
});
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
try {
  await client.connect(transport);
} catch (err) {
  console.error(`waiting-agent.mjs: connect to ${url}: ${err?.stack || err}`);
  process.exit(1);
}
const out = { progress, text: null, isError: false, error: null };
try {
  const res = await client.callTool({ name: tool, arguments: {}, _meta: { progressToken: PROGRESS_TOKEN } });
  out.text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  out.isError = res.isError === true;
} catch (err) {
  out.error = String(err?.message || err);
}
console.log(JSON.stringify(out));
await client.close();
