import { describeUrl } from '../config/check.ts';

/** The MCP server's environment, read once at start; a bad value stops it with exit code 2 and a message naming it. */
export interface McpEnv {
  /** `INTERLOCK_URL` (http://127.0.0.1:3000, where `npm start` listens): the Interlock server to talk to. */
  interlockUrl: string;
  /** `INTERLOCK_AGENT_TOKEN` (required): the agent's bearer token, one of the config's `agents`. */
  agentToken: string;
}

/** Where `npm start` listens by default (server/config/env.ts: HOST 127.0.0.1, PORT 3000). */
export const DEFAULT_INTERLOCK_URL = 'http://127.0.0.1:3000';

/** The environment's values, or every problem with it, each naming its variable. */
export function parseMcpEnv(env: Readonly<Record<string, string | undefined>>): { env: McpEnv } | { problems: string[] } {
  const problems: string[] = [];
  const url = env.INTERLOCK_URL || DEFAULT_INTERLOCK_URL;
  if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) {
    // Shown without its credentials or query: stderr ends up in an MCP client's logs.
    problems.push(`INTERLOCK_URL must be an http(s) URL such as ${DEFAULT_INTERLOCK_URL}, not ${describeUrl(url)}`);
  }
  const token = env.INTERLOCK_AGENT_TOKEN ?? '';
  if (token === '') {
    problems.push("INTERLOCK_AGENT_TOKEN is required: the agent's bearer token for Interlock (one of the agents in its interlock.yaml)");
  } else if (/\s/.test(token)) {
    problems.push('INTERLOCK_AGENT_TOKEN must be one token with no spaces or line breaks');
  }
  return problems.length > 0 ? { problems } : { env: { interlockUrl: url, agentToken: token } };
}

/** What `interlock-mcp --help` prints: how to run it and the environment it reads. */
export const MCP_USAGE = `Usage: interlock-mcp
  (from a checkout of Interlock: npm run --silent mcp; built: node dist/server/mcp.js)

Interlock's tools (request_refund, get_refund, wait_for_decision, verify_receipt) for an MCP client,
over stdio: start it from the client's configuration, not by hand. Stdout carries the protocol;
logs go to stderr.

Environment:
  INTERLOCK_URL          the Interlock server to talk to (default ${DEFAULT_INTERLOCK_URL})
  INTERLOCK_AGENT_TOKEN  required: the agent's bearer token, one of the agents in its interlock.yaml

Options:
  -h, --help             print this and exit
`;
