#!/usr/bin/env node
import { createInterlockClient } from '@interlock-placeholder/client';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { MCP_USAGE, parseMcpEnv } from './env.ts';
import { createMcpServer } from './tools.ts';

// `npm run mcp` (or `interlock-mcp`, installed): Interlock's tools for an MCP client over stdio.
// Stdout carries the protocol and nothing else; every log line goes to stderr.

const log = (message: string) => process.stderr.write(`${message}\n`);

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(MCP_USAGE);
  process.exit(0);
}

const parsed = parseMcpEnv(process.env);
if ('problems' in parsed) {
  for (const problem of parsed.problems) log(`interlock mcp: ${problem}`);
  process.exit(2);
}
const { interlockUrl, agentToken } = parsed.env;

const server = createMcpServer(createInterlockClient({ baseUrl: interlockUrl, token: agentToken }), log);
// The client going away ends the session; a wait in progress has nobody left to answer.
process.stdin.once('end', () => process.exit(0));
await server.connect(new StdioServerTransport());
log(`interlock mcp: ready on stdio, asking Interlock at ${interlockUrl}`);
