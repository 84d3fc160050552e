import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createInterlockClient } from '../../shared/client/index.ts';
import { parseMcpEnv } from './env.ts';
import { createMcpServer } from './tools.ts';

// `npm run mcp`: Interlock's tools for an MCP client over stdio. Stdout carries the protocol and
// nothing else; every log line goes to stderr.

const log = (message: string) => process.stderr.write(`${message}\n`);

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
