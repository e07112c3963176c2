#!/usr/bin/env node
// prompts.mjs is a stdio MCP server, built on the official SDK (the one
// server-everything brings), that lists the prompts a JSON file names:
//
//   node prompts.mjs FILE    where FILE holds [{"name", "description"}, ...]
//
// The file is read at start, so a test changes what the next verification
// sees by rewriting it, as a server that changes its prompts behind a
// person's back would.
import fs from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const file = process.argv[2];
if (!file) {
  console.error('usage: prompts.mjs FILE');
  process.exit(2);
}
const prompts = JSON.parse(fs.readFileSync(file, 'utf8'));
const server = new McpServer({ name: 'prompts', version: '1.0.0' });
for (const p of prompts) {
  server.registerPrompt(p.name, { description: p.description }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: p.description } }],
  }));
}
await server.connect(new StdioServerTransport());
