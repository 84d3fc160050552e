import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_INTERLOCK_URL, parseMcpEnv } from '../../server/mcp/env.ts';
import { limits } from '../../shared/limits.ts';
import { SERVER_ENTRY_POINTS } from '../../server/tools.ts';
import { fencedBlocks, readPage } from '../docs/pages.ts';

/** How the MCP server is configured: its environment, and the client configuration its page gives. */

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('MCP server environment', () => {
  it('INTERLOCK_URL defaults to where npm start listens; the token is taken as given', () => {
    expect(DEFAULT_INTERLOCK_URL).toBe('http://127.0.0.1:3000');
    expect(parseMcpEnv({ INTERLOCK_AGENT_TOKEN: 'sk_agent_x' })).toEqual({ env: { interlockUrl: DEFAULT_INTERLOCK_URL, agentToken: 'sk_agent_x' } });
    expect(parseMcpEnv({ INTERLOCK_URL: 'https://interlock.example/base', INTERLOCK_AGENT_TOKEN: 't' })).toMatchObject({ env: { interlockUrl: 'https://interlock.example/base' } });
  });

  it.each(['ftp://bot:Hunter2sekrit@interlock.example/', 'ftp://interlock.example/?token=Hunter2sekrit', 'https://bot:Hunter2sekrit@'])(
    'a refused INTERLOCK_URL never echoes its password or query: %s',
    (url) => {
      const parsed = parseMcpEnv({ INTERLOCK_URL: url, INTERLOCK_AGENT_TOKEN: 't' });
      expect(parsed).toMatchObject({ problems: [expect.stringMatching(/^INTERLOCK_URL must be an http\(s\) URL/)] });
      expect(JSON.stringify(parsed)).not.toContain('Hunter2sekrit');
    },
  );

  it('every bad value is named at once: no token, a URL that is not http(s), a token with a space', () => {
    expect(parseMcpEnv({ INTERLOCK_URL: 'ftp://x' })).toEqual({
      problems: [
        'INTERLOCK_URL must be an http(s) URL such as http://127.0.0.1:3000, not "ftp://x"',
        "INTERLOCK_AGENT_TOKEN is required: the agent's bearer token for Interlock (one of the agents in its interlock.yaml)",
      ],
    });
    expect(parseMcpEnv({ INTERLOCK_AGENT_TOKEN: 'two words' })).toEqual({ problems: ['INTERLOCK_AGENT_TOKEN must be one token with no spaces or line breaks'] });
  });

  const page = readPage('docs/agents/mcp.md');
  const servers = fencedBlocks(page, 'json').map((block) => JSON.parse(block).mcpServers?.interlock);

  it("the MCP page's first client configuration runs the compiled server with plain node and both variables, no cwd", () => {
    expect(servers[0]).toEqual({ command: 'node', args: ['/path/to/interlock/dist/server/mcp.js'], env: expect.any(Object) });
    expect(Object.keys(servers[0].env).sort()).toEqual(['INTERLOCK_AGENT_TOKEN', 'INTERLOCK_URL']);
    // dist/server/mcp.js is what `npm run build` writes from the MCP server's entry point.
    expect(SERVER_ENTRY_POINTS.mcp).toBe('server/mcp/main.ts');
  });

  it("the MCP page's configuration from a checkout runs the mcp script quietly (npm's banner would corrupt the protocol)", () => {
    expect(servers[1]).toMatchObject({ command: 'npm', args: ['--prefix', '/path/to/interlock', 'run', '--silent', 'mcp'] });
    expect(Object.keys(servers[1].env).sort()).toEqual(['INTERLOCK_AGENT_TOKEN', 'INTERLOCK_URL']);
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.mcp).toBe('tsx server/mcp/main.ts');
  });

  it("the MCP page's configuration of the installed package runs the package's command", () => {
    const manifest = JSON.parse(readFileSync(join(root, 'packages/mcp/package.json'), 'utf8'));
    expect(servers[2]).toEqual({ command: 'interlock-mcp', env: expect.any(Object) });
    expect(Object.keys(manifest.bin)).toEqual(['interlock-mcp']);
  });

  it("the MCP page's wait_for_decision item gives the default and the cap the server has", () => {
    const line = page.split('\n- ').find((text) => text.startsWith('`wait_for_decision'))?.replace(/\s+/g, ' ');
    expect(line).toContain(`(${limits.mcpWaitSecondsDefault} unless told)`);
    expect(line).toContain(`One call waits at most ${limits.mcpWaitSecondsMax} s, a larger \`timeout_seconds\` is taken as ${limits.mcpWaitSecondsMax}`);
  });
});
