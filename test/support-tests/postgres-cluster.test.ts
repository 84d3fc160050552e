import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { postgresOrSkip } from '../support/postgres.ts';

// The throwaway cluster of a test process (test/support/postgres.ts) on a machine shared by
// several test processes: each starts its own, on its own port and folder, and one killed with
// SIGKILL (no exit handler runs) leaves neither a running cluster nor its folder behind.

const available = postgresOrSkip('the PostgreSQL test cluster test (test/support-tests/postgres-cluster.test.ts)');
const childScript = fileURLToPath(new URL('./support/pg-cluster-child.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

function startChild() {
  const child = spawn(process.execPath, ['--import', 'tsx', childScript], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  const where = (async () => {
    const line = await readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]().next();
    if (line.done) throw new Error('the child ended before its cluster started');
    return JSON.parse(line.value) as { port: number; dir: string };
  })();
  return { child, where };
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

async function until(what: string, check: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  for (const endMs = Date.now() + ms; Date.now() < endMs; ) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`not within ${ms} ms: ${what}`);
}

describe.skipIf(!available)('the throwaway PostgreSQL cluster of a test process', () => {
  it('two processes start one each, on ports and folders of their own; SIGKILL leaves neither cluster nor folder behind', async () => {
    const children = [startChild(), startChild()];
    try {
      const [a, b] = await Promise.all(children.map((c) => c.where));
      expect(a!.port).not.toBe(b!.port);
      expect(a!.dir).not.toBe(b!.dir);
      for (const { port, dir } of [a!, b!]) {
        expect(await accepts(port)).toBe(true);
        expect(fs.existsSync(dir)).toBe(true);
      }
      for (const { child } of children) child.kill('SIGKILL');
      for (const { port, dir } of [a!, b!]) {
        await until(`the cluster on port ${port} stopped`, async () => !(await accepts(port)), 15_000);
        await until(`${dir} removed`, () => !fs.existsSync(dir), 15_000);
      }
    } finally {
      for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }, 60_000);
});
