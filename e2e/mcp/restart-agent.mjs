#!/usr/bin/env node
// restart-agent.mjs is an MCP agent built on the official TypeScript
// SDK's v2 client (@modelcontextprotocol/client) that holds one session
// across a restart of the dashboard, for the Go test of sessions that
// survive one:
//
//   node restart-agent.mjs MCP-URL BEARER-TOKEN TOOL
//
// It speaks 2025-11-25 (a session with an Mcp-Session-Id), lists the
// tools and prints {"session": ID, "tools": [...]} on a line of its own;
// then, when a line comes on stdin (the dashboard was restarted), lists
// the tools and calls TOOL on the same client and transport, and prints
// {"session": ID, "tools": [...], "text": ..., "isError": ..., "error": ...}.
// Then it ends the session (a DELETE). It never opens a new session by
// itself, as agents' clients do not.
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, token, tool] = process.argv.slice(2);
if (!url || !token || !tool) {
  console.error('usage: restart-agent.mjs MCP-URL BEARER-TOKEN TOOL');
  process.exit(2);
}
const client = new Client({ name: 'restart-agent', version: '1.0.0' }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
try {
  await client.connect(transport);
} catch (err) {
  console.error(`restart-agent.mjs: connect to ${url}: ${err?.stack || err}`);
  process.exit(1);
}
const names = async () => (await client.listTools()).tools.map((t) => t.name);
console.log(JSON.stringify({ session: transport.sessionId, tools: await names() }));

const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));
lines.close();
const out = { session: transport.sessionId, tools: null, text: null, isError: false, error: null };
try {
  out.tools = await names();
  const res = await client.callTool({ name: tool, arguments: {} });
  out.text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  out.isError = res.isError === true;
} catch (err) {
  out.error = String(err?.message || err);
}
out.session = transport.sessionId;
console.log(JSON.stringify(out));
await transport.terminateSession().catch(() => {}); // a DELETE: the session ends
await client.close().catch(() => {});
process.exit(0);
