#!/usr/bin/env node
// agent.mjs is an MCP agent built on the official TypeScript SDK's v2
// client (@modelcontextprotocol/client), for the Go tests that check what
// a real agent of another SDK gets through Switchboard's /mcp:
//
//   node agent.mjs MCP-URL BEARER-TOKEN ERA    ERA: 2025-11-25 or 2026-07-28
//
// It declares sampling, elicitation (form and URL) and roots, and answers
// them as an agent would, with fixed answers a test can look for: its
// model is "ts-agent-model" and says "ts-agent heard: PROMPT", its person
// accepts every form with FORM_CONTENT and every URL, and its roots are
// ROOTS. It then calls server-everything's tools (as "everything__…") one
// after the other and prints one JSON object on stdout: the tools offered,
// and per call its result text or error, the progress notifications and
// the log messages that arrived while it ran. A failed call is reported
// there, not by the exit status; failing to connect exits 1.
//
// At 2025-11-25 the client has a session and answers Switchboard's
// requests during a call; at 2026-07-28 it is stateless and the same
// handlers answer a call's input_required result, after which the client
// calls again by itself (its inputRequired auto-fulfilment).
import { Client, LOG_LEVEL_META_KEY, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, token, era] = process.argv.slice(2);
if (!url || !token || !['2025-11-25', '2026-07-28'].includes(era)) {
  console.error('usage: agent.mjs MCP-URL BEARER-TOKEN 2025-11-25|2026-07-28');
  process.exit(2);
}

const MODEL = 'ts-agent-model';
const FORM_CONTENT = { name: 'TS Agent', check: true, email: 'ts-agent@example.com', integer: 7 };
const ROOTS = [
  { uri: 'file:///work/ts-agent', name: 'ts-agent' },
  { uri: 'file:///tmp', name: 'tmp' },
];
// The token this agent asks its progress under: the test checks that the
// server's progress comes back under it, not under Switchboard's own.
const PROGRESS_TOKEN = `ts-agent-progress-${era}`;

const modern = era === '2026-07-28';
const client = new Client(
  { name: `ts-agent-${era}`, version: '1.0.0' },
  {
    capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } },
    // The default is the 2025 initialize handshake; a pin speaks
    // 2026-07-28 (server/discover) or fails.
    ...(modern && { versionNegotiation: { mode: { pin: era } } }),
  },
);

client.setRequestHandler('sampling/createMessage', async (request) => {
  const last = request.params.messages.at(-1);
  const prompt = last?.content?.type === 'text' ? last.content.text : JSON.stringify(last?.content);
  return { model: MODEL, role: 'assistant', content: { type: 'text', text: `ts-agent heard: ${prompt}` } };
});
client.setRequestHandler('elicitation/create', async (request) => {
  if (request.params.mode === 'url') {
    return { action: 'accept' };
  }
  return { action: 'accept', content: FORM_CONTENT };
});
client.setRequestHandler('roots/list', async () => ({ roots: ROOTS }));

// The calls run one at a time, so what arrives is the current call's;
// log messages heard between calls are kept apart. Progress is heard here,
// with the token as it came, rather than through the SDK's onprogress,
// which gives the request a token of its own (its message id) and
// reports no token.
let current = null;
const outside = [];
let heardLog = null;
client.setNotificationHandler('notifications/progress', (n) => {
  if (current) current.progress.push(n.params.progressToken);
});
client.setNotificationHandler('notifications/message', (n) => {
  const log = { level: n.params.level, logger: n.params.logger, data: n.params.data };
  if (current) current.logs.push(log);
  else outside.push(log);
  heardLog?.();
});

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
try {
  await client.connect(transport);
} catch (err) {
  console.error(`agent.mjs: connect to ${url} at ${era}: ${err?.stack || err}`);
  process.exit(1);
}
const negotiated = client.getNegotiatedProtocolVersion();
if (negotiated !== era) {
  console.error(`agent.mjs: asked for ${era}, the client speaks ${negotiated}`);
  process.exit(1);
}

// Log messages are asked for as each era has it: a session's
// logging/setLevel, or the level in each 2026-07-28 request's _meta.
const meta = {};
if (modern) {
  meta[LOG_LEVEL_META_KEY] = 'debug';
} else {
  await client.setLoggingLevel('debug');
}

const offered = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('everything__')).sort();

const calls = {};
async function call(tool, args, extraMeta = {}) {
  const record = { text: null, isError: false, error: null, progress: [], logs: [] };
  calls[tool] = record;
  current = record;
  try {
    const res = await client.callTool(
      { name: `everything__${tool}`, arguments: args, _meta: { ...meta, ...extraMeta } },
      // The machine running the tests may be slow: the call's own bound
      // is Switchboard's, not the SDK's default minute.
      { timeout: 110_000 },
    );
    record.text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    record.isError = res.isError === true;
  } catch (err) {
    record.error = String(err?.message || err);
  } finally {
    current = null;
  }
  return record;
}

// toggle-simulated-logging comes first: its first message is written as
// the call starts, and Switchboard drops what a server logs within 250 ms
// of the end of another request on the session (it may be about that
// one), which a call just after another would fall in. The message may be
// read just after the result, so the agent waits for it a while (the
// server writes the next one only 5 s later).
const logged = new Promise((resolve) => { heardLog = resolve; });
const toggled = await call('toggle-simulated-logging', {});
if (toggled.logs.length === 0) {
  let timer;
  await Promise.race([logged, new Promise((resolve) => { timer = setTimeout(resolve, 10_000); })]);
  clearTimeout(timer);
}
heardLog = null;

await call('trigger-sampling-request', { prompt: 'what is a switchboard?' });
await call('trigger-elicitation-request', {});
await call('trigger-url-elicitation', { url: 'https://example.com/sign' });
await call('get-roots-list', {});
// Runs only as an MCP task, which Switchboard runs for the agent.
await call('simulate-research-query', { topic: 'tides' });
// 6 s: the server's next simulated log message comes during it too.
await call('trigger-long-running-operation', { duration: 6, steps: 3 }, { progressToken: PROGRESS_TOKEN });

console.log(JSON.stringify({ era: negotiated, progressToken: PROGRESS_TOKEN, offered, calls, logsOutsideCalls: outside }));
await client.close();
