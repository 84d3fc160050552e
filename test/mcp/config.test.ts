import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_INTERLOCK_URL, parseMcpEnv } from '../../server/mcp/env.ts';
import { limits } from '../../shared/limits.ts';

/** How the MCP server is configured: its environment, and the client configuration README gives. */

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

  it("README's MCP client configuration runs the mcp script quietly (npm's banner would corrupt the protocol) with both variables", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Ask for a refund, as an agent would\n'), readme.indexOf("\n## The approvers' API"));
    const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    const server = JSON.parse(block ?? '{}').mcpServers?.interlock;
    expect(server).toMatchObject({ command: 'npm', args: ['run', '--silent', 'mcp'] });
    expect(Object.keys(server.env).sort()).toEqual(['INTERLOCK_AGENT_TOKEN', 'INTERLOCK_URL']);
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.mcp).toBe('tsx server/mcp/main.ts');
  });

  it("README's wait_for_decision line gives the default and the cap the server has", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const line = readme.split('\n').find((text) => text.startsWith('- `wait_for_decision'));
    expect(line).toContain(`(${limits.mcpWaitSecondsDefault} unless told)`);
    expect(line).toContain(`One call waits at most ${limits.mcpWaitSecondsMax} s, a larger \`timeout_seconds\` is taken as ${limits.mcpWaitSecondsMax}`);
  });
});
