import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerRow } from '../../shared/ledger.ts';
import { connectSandbox, type RemoteSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { compiledScript } from '../support/compiled-entries.ts';
import { clientFor, compiledEntry, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

/**
 * examples/vercel-ai-sdk as an integrator runs it: the AI SDK's MCP client starts Interlock's
 * compiled MCP server on stdio, and its agent loop with a scripted model asks a real Interlock
 * server for a refund, reads the tool result, and answers.
 */

const example = compiledScript(fileURLToPath(new URL('../../examples/vercel-ai-sdk/agent.ts', import.meta.url)));

let dir: string;
let server: ServerProcess;
let sandbox: RemoteSandbox;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-example-'));
  const [port, sandboxPort] = [await freePort(), await freePort()];
  server = await startServerProcess({ PORT: String(port), SANDBOX_PORT: String(sandboxPort), DATA_DIR: dir, INTERLOCK_CONFIG: writeTestConfig(dir) });
  sandbox = connectSandbox(`http://127.0.0.1:${sandboxPort}`);
});

afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** Run the example to its exit with `args`: its exit code and what it printed. */
async function runExample(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [example, ...args], {
    env: { ...process.env, INTERLOCK_URL: server.url, INTERLOCK_AGENT_TOKEN: AGENT_TOKEN, INTERLOCK_MCP_SERVER: compiledEntry('mcp') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

describe('examples/vercel-ai-sdk: an AI SDK agent with Interlock through MCP', () => {
  it('gets COMMITTED for a routine refund, which is in the ledger; the same request_id again gets the duplicate answer', async () => {
    const pi = (await sandbox.createPaymentIntent(10_000)).id;
    const args = ['--payment-intent', pi, '--amount', '2000', '--request-id', 'case-4471/1', '--currency', 'usd'];
    const first = await runExample(args);
    expect(first, first.stderr).toMatchObject({ code: 0 });
    expect(first.stdout).toContain('tools: get_refund, request_refund, verify_receipt, wait_for_decision\n');
    expect(first.stdout).toContain(`agent called request_refund {"request_id":"case-4471/1","payment_intent":"${pi}","amount":2000,"currency":"usd"}\n`);
    expect(first.stdout).toMatch(/\nrequest_refund answered:\n {2}Sent \(COMMITTED\): the refund was sent to Stripe once\.\n {2}Stripe refund: re_\w+\.\n/);
    expect(first.stdout).toMatch(/\nagent said: Your refund has been sent\. \(Sent \(COMMITTED\): the refund was sent to Stripe once\.\)\n$/);
    const refundId = /Stripe refund: (re_\w+)\./.exec(first.stdout)?.[1];

    const ledger = clientFor(server.url);
    await expect
      .poll(async () => ((await ledger.as('fin', 'GET', '/api/ledger')).body.rows as LedgerRow[]).map((row) => [row.request_id, row.status, row.refund_id]))
      .toEqual([['case-4471/1', 'COMMITTED', refundId]]);

    const again = await runExample(args);
    expect(again, again.stderr).toMatchObject({ code: 0 });
    expect(again.stdout).toMatch(/\nrequest_refund answered:\n {2}Already sent; nothing was sent twice \(DUPLICATE_IGNORED\): /);
    expect(again.stdout).toMatch(/\nagent said: That refund was already sent; nothing was sent twice\. /);
    expect((await sandbox.refunds(pi)).map((refund) => refund.id)).toEqual([refundId]);
  });
});
