/**
 * The MCP server as a library, for a program that serves Interlock's tools over a transport of its
 * own: `createMcpServer(createInterlockClient(...), log)`, then `server.connect(transport)`. The
 * `interlock-mcp` command (main.ts) does that over stdio.
 */
export { DEFAULT_INTERLOCK_URL, MCP_USAGE, type McpEnv, parseMcpEnv } from './env.ts';
export { createMcpServer } from './tools.ts';
