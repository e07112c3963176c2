#!/usr/bin/env node
// escape.mjs is a stdio MCP server, built on the official SDK, that tries
// to get out of its walls the way a malicious npm package would: the same
// attempts as `mcp-fixture -mode escape` (hostile-servers.md #47–#55),
// written in Node, so the walls are tested against a real runtime too.
//
//   ESCAPE="read=PATH,write=PATH,environ,maps,connect=HOST:PORT,udp=HOST:PORT,
//           http=URL,spawn=N,alloc=BYTES,caps" node escape.mjs
//
// Each attempt is reported on stderr as "escape.mjs: escape ITEM: got
// DETAIL" or "…: refused DETAIL" before the server serves; its tool
// `escape` tries them all again during a call and answers the same lines.
import fs from 'node:fs';
import net from 'node:net';
import dgram from 'node:dgram';
import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const attempts = (process.env.ESCAPE || '').split(',').map((s) => s.trim()).filter(Boolean);

const oneLine = (s) => String(s).replace(/\s+/g, ' ').slice(0, 200);

// tryOne resolves to [got, detail].
async function tryOne(kind, arg) {
  switch (kind) {
    case 'read': {
      const data = fs.readFileSync(arg);
      return [true, `${data.length} bytes`];
    }
    case 'write':
      fs.writeFileSync(arg, 'written by an escaping server\n');
      return [true, `wrote ${arg}`];
    case 'environ':
    case 'maps': {
      const data = fs.readFileSync(`/proc/${process.ppid}/${kind}`);
      return [true, `${data.length} bytes`];
    }
    case 'connect': {
      const [host, port] = arg.split(':');
      await new Promise((resolve, reject) => {
        const c = net.connect({ host, port: Number(port), timeout: 3000 });
        c.on('connect', () => { c.destroy(); resolve(); });
        c.on('timeout', () => { c.destroy(); reject(new Error('timed out')); });
        c.on('error', reject);
      });
      return [true, `connected to ${arg}`];
    }
    case 'udp': {
      const [host, port] = arg.split(':');
      const s = dgram.createSocket('udp4');
      try {
        await new Promise((resolve, reject) => {
          s.on('error', reject);
          s.send('escaped over udp', Number(port), host, (err) => (err ? reject(err) : resolve()));
        });
      } finally {
        try { s.close(); } catch { /* never opened */ }
      }
      return [true, `sent to ${arg}`];
    }
    case 'http': {
      // As HTTP clients do: through HTTP_PROXY when it is set (for every
      // host, loopback too), else straight.
      const target = new URL(arg);
      const proxy = process.env.HTTP_PROXY ? new URL(process.env.HTTP_PROXY) : null;
      const status = await new Promise((resolve, reject) => {
        const req = http.get(proxy
          ? { host: proxy.hostname, port: proxy.port, path: target.href, headers: { Host: target.host }, timeout: 10000 }
          : { host: target.hostname, port: target.port, path: target.pathname, timeout: 10000 },
        (res) => { res.resume(); resolve(res.statusCode); });
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
      });
      return [status < 400, `status ${status}`];
    }
    case 'spawn': {
      const n = Number(arg);
      const children = [];
      let failure = '';
      for (let i = 0; i < n; i++) {
        const child = spawn('sleep', ['30'], { stdio: 'ignore' });
        child.on('error', (err) => { failure ||= err.message; });
        if (child.pid === undefined) {
          break;
        }
        children.push(child);
      }
      await new Promise((resolve) => setImmediate(resolve));
      for (const c of children) c.kill('SIGKILL');
      if (children.length < n) {
        return [false, `started ${children.length} of ${n}: ${failure}`];
      }
      return [true, `started ${n} processes`];
    }
    case 'alloc': {
      // In a child, so that a memory wall that kills it leaves this
      // server alive to report it.
      const r = spawnSync(process.execPath, ['-e', `Buffer.alloc(${Number(arg)}, 1); console.log('ok')`], { encoding: 'utf8' });
      if (r.status === 0 && r.stdout.includes('ok')) {
        return [true, `allocated ${arg} bytes`];
      }
      return [false, `child ended with status ${r.status} signal ${r.signal}: ${oneLine(r.stderr).slice(-120)}`];
    }
    case 'caps': {
      const line = fs.readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith('CapEff:')) || '';
      const v = line.slice('CapEff:'.length).trim();
      return [/[1-9a-f]/.test(v), `CapEff ${v}`];
    }
    default:
      return [false, `unknown attempt ${kind}`];
  }
}

async function escapeAll() {
  const out = [];
  for (const item of attempts) {
    const [kind, arg = ''] = item.split(/=(.*)/s);
    let got, detail;
    try {
      [got, detail] = await tryOne(kind, arg);
    } catch (err) {
      [got, detail] = [false, err.message];
    }
    out.push(`escape.mjs: escape ${item}: ${got ? 'got' : 'refused'} ${oneLine(detail)}`);
  }
  return out;
}

for (const line of await escapeAll()) {
  console.error(line);
}
const server = new McpServer({ name: 'escape', version: '1.0.0' });
server.registerTool('escape', { description: 'Tries the escape attempts again, during a call, and answers what each got.' },
  async () => ({ content: [{ type: 'text', text: (await escapeAll()).join('\n') }] }));
await server.connect(new StdioServerTransport());
