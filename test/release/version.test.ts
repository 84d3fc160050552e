import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAppWorld } from '../support/app-world.ts';
import { cleanUpDatabases, makeTempDir } from '../support/db-journals.ts';
import { freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

// Which Interlock runs is package.json's version, and an operator can read it in three places:
// /healthz, the interlock_build_info gauge of /metrics, and the first line of the log.

const root = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string; license?: string };

describe('the version', () => {
  const servers: ServerProcess[] = [];
  afterAll(() => {
    for (const server of servers) server.child.kill('SIGKILL');
    cleanUpDatabases();
  });

  it('package.json names it (semver) and no licence is granted', () => {
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    expect(manifest.license).toBe('UNLICENSED');
  });

  it('/healthz answers it, and /metrics has interlock_build_info{version} 1', async () => {
    const world = await buildAppWorld();
    try {
      const health = await world.app.inject({ method: 'GET', url: '/healthz', headers: { host: 'anything.example' } });
      expect(health.json()).toEqual({ ok: true, version: manifest.version });
      const metrics = await world.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
      expect(metrics.body).toContain('# TYPE interlock_build_info gauge');
      expect(metrics.body.split('\n').filter((line) => line.startsWith('interlock_build_info'))).toEqual([`interlock_build_info{version="${manifest.version}"} 1`]);
    } finally {
      await world.close();
    }
  });

  it('the first line a started server logs names it and the Node under it (real process)', async () => {
    const dir = makeTempDir();
    const server = await startServerProcess(
      { PORT: String(await freePort()), SANDBOX_PORT: '0', DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: writeTestConfig(dir), LOG_LEVEL: 'info' },
      { logs: true },
    );
    servers.push(server);
    const first = JSON.parse(server.stdout().split('\n')[0]!) as { msg: string; version: string; node: string };
    expect(first).toMatchObject({ msg: `Interlock ${manifest.version} starting on Node ${process.version}`, version: manifest.version, node: process.version });
  });
});
