import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createInterlockClient } from '../../shared/client/index.ts';
import { fencedBlocks, readPage } from '../docs/pages.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { type ListeningWorld, startListeningWorld } from './listening-world.ts';

/** The typed-client page's example, run as written against a live server: only the address and the payment are this test's. */

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The page's TypeScript example, importing the client from `clientModule` instead of the checkout's root. */
function readmeExample(clientModule: string): string {
  const blocks = fencedBlocks(readPage('docs/agents/typed-client.md'), 'ts');
  expect(blocks).toHaveLength(1);
  return replaceExactly(blocks[0]!, "'./shared/client/index.ts'", JSON.stringify(clientModule));
}

const clientPath = join(root, 'shared/client/index.ts');

/** `text` with `from` replaced by `to`, failing when `from` is not there (the page changed under the test). */
function replaceExactly(text: string, from: string, to: string): string {
  expect(text, `the typed-client example no longer contains ${from}`).toContain(from);
  return text.replace(from, to);
}

let live: ListeningWorld;
let dir: string;
beforeAll(async () => {
  live = await startListeningWorld();
  dir = mkdtempSync(join(tmpdir(), 'interlock-readme-'));
});
afterAll(async () => {
  await live.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the typed client's page", () => {
  it('the typed-client example runs as written: queued, approved while it waits, COMMITTED with a valid receipt', async () => {
    let code = readmeExample(pathToFileURL(clientPath).href);
    code = replaceExactly(code, "'http://127.0.0.1:3000'", JSON.stringify(live.url));
    code = replaceExactly(code, "token: 'sk_agent_demo_support_bot'", `token: ${JSON.stringify(AGENT_TOKEN)}`);
    const file = join(dir, 'agent.ts');
    writeFileSync(file, code);

    process.env.PI = await live.world.payment(10_000);
    const logs: unknown[][] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void logs.push(args));
    const error = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logs.push(['error', ...args]));
    try {
      const run = import(pathToFileURL(file).href);
      // An approver decides while the example waits (its first read again is 1 s later).
      const reader = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN });
      let effectId: string | null = null;
      for (let i = 0; i < 100 && effectId === null; i++) {
        const seen = await reader.getRefund('case-4473').catch(() => null);
        if (seen?.answer.status === 'QUEUED') effectId = seen.answer.effect_id;
        else await new Promise((r) => setTimeout(r, 20));
      }
      expect(await live.approve(effectId ?? 'never queued')).toBe('COMMITTED');
      await run;
    } finally {
      log.mockRestore();
      error.mockRestore();
      delete process.env.PI;
    }
    expect(logs).toEqual([
      ['QUEUED', 'an approver must decide: over $50.00'],
      ['COMMITTED', true],
    ]);
  });

  it('the typed-client example type-checks against the client as the project compiles it', () => {
    const exampleDir = join(dir, 'typecheck');
    const file = join(exampleDir, 'agent.ts');
    const config = join(exampleDir, 'tsconfig.json');
    mkdirSync(exampleDir);
    writeFileSync(file, readmeExample(clientPath));
    writeFileSync(config, JSON.stringify({ extends: join(root, 'tsconfig.json'), include: [file], compilerOptions: { typeRoots: [join(root, 'node_modules/@types')] } }));
    const tsc = spawnSync(join(root, 'node_modules/typescript/bin/tsc'), ['--noEmit', '-p', config], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  });
});
