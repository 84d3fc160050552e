import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { loggerOptions } from '../../server/app/log-options.ts';

describe('log format', () => {
  it('JSON lines when stdout is not a terminal, pino-pretty on a terminal, nothing when silent', () => {
    expect(loggerOptions('info', false)).toEqual({ level: 'info' });
    expect(loggerOptions('debug', true)).toMatchObject({ level: 'debug', transport: { target: 'pino-pretty' } });
    expect(loggerOptions('silent', true)).toBe(false);
  });

  it('pino-pretty is installed where pino looks for it, and formats a line', () => {
    // A child process, as pino runs the transport: the package resolves from the server's folder.
    const line = JSON.stringify({ level: 30, time: 0, reqId: 'r-1', msg: 'refund r-1 of support-bot: COMMITTED' });
    const pretty = spawnSync(process.execPath, [createRequire(import.meta.url).resolve('pino-pretty/bin.js'), '--colorize', 'false'], { input: `${line}\n`, encoding: 'utf8' });
    expect(pretty.status).toBe(0);
    expect(pretty.stdout).toMatch(/INFO.*refund r-1 of support-bot: COMMITTED/);
  });
});
