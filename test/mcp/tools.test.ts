import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isJsonObject } from '../../shared/json.ts';
import { connectSandbox, type RemoteSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

/** `npm run mcp` as an MCP client sees it: the SDK's own Client over stdio, against a real Interlock server process. */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

let dir: string;
let server: ServerProcess;
let sandbox: RemoteSandbox;
let mcp: Client;
/** An MCP server started with a token Interlock does not know. */
let stranger: Client;
/** An MCP server started with no token at all: how it ended, and what it printed. */
let tokenless: Promise<{ code: number | null; stdout: string; stderr: string }>;

/** The variables of `env` that are set. */
function definedEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** Spawn the MCP server (as `npm run mcp` does) and connect the SDK's client to it. */
async function connectMcp(env: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'server/mcp/main.ts'],
    cwd: repoRoot,
    env: { ...definedEnv(process.env), ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'interlock-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** Run the MCP server to its exit under `env` (nothing on stdin): its exit code and output. */
async function runMcpToExit(env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/mcp/main.ts'], { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'] });
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

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-'));
  const [port, sandboxPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const { INTERLOCK_AGENT_TOKEN: _drop, ...withoutToken } = process.env;
  tokenless = runMcpToExit(withoutToken);
  // The MCP processes ask nothing of Interlock until a tool is called, so all start at once.
  [server, mcp, stranger] = await Promise.all([
    startServerProcess({ PORT: String(port), SANDBOX_PORT: String(sandboxPort), DATA_DIR: dir, INTERLOCK_CONFIG: writeTestConfig(dir) }),
    connectMcp({ INTERLOCK_URL: url, INTERLOCK_AGENT_TOKEN: AGENT_TOKEN }),
    connectMcp({ INTERLOCK_URL: url, INTERLOCK_AGENT_TOKEN: 'sk_agent_wrong_token' }),
  ]);
  sandbox = connectSandbox(`http://127.0.0.1:${sandboxPort}`);
}, 30_000);

afterAll(async () => {
  await Promise.all([mcp?.close(), stranger?.close(), tokenless]);
  server?.child.kill('SIGTERM');
  await server?.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** Call a tool; the result's text, its raw answer, and whether it is a tool error. */
async function call(name: string, args: Record<string, unknown>, client: Client = mcp) {
  const result = CallToolResultOf(await client.callTool({ name, arguments: args }));
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
  return { text, structured: result.structuredContent ?? {}, isError: result.isError === true };
}

function CallToolResultOf(value: unknown): CallToolResult {
  if (!isJsonObject(value) || !Array.isArray(value.content)) throw new Error(`not a tool result: ${JSON.stringify(value)}`);
  return value as CallToolResult;
}

const payment = async (amountCents: number) => (await sandbox.createPaymentIntent(amountCents)).id;

describe('MCP server: tools', () => {
  it('lists request_refund, get_refund, wait_for_decision and verify_receipt; request_refund requires request_id', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['get_refund', 'request_refund', 'verify_receipt', 'wait_for_decision']);
    const refund = tools.find((tool) => tool.name === 'request_refund')!;
    expect(refund.inputSchema.required).toEqual(['request_id', 'payment_intent', 'amount']);
    expect(refund.inputSchema.properties?.request_id).toMatchObject({ type: 'string', maxLength: 200, pattern: '^[A-Za-z0-9._:/-]+$' });
    expect(refund.inputSchema.properties?.amount).toMatchObject({ type: 'integer', minimum: 1 });
    // A model told "2000 is $20.00" refunds ¥2,000 on a yen payment: the unit is the payment currency's smallest.
    const amount = refund.inputSchema.properties?.amount as { description?: string };
    expect(amount.description).toContain('the smallest currency unit (cents for USD, whole yen for JPY)');
    expect(amount.description).toContain('2000 is $20.00 on a dollar payment and ¥2,000 on a yen payment');
    expect(refund.description).toMatch(/never generated by this tool/);
    expect(refund.description).toMatch(/same request_id and the same arguments: that is what makes a retry safe/);
    // An argument a tool does not take is refused, never dropped: the schema a model reads says so.
    expect(tools.map((tool) => [tool.name, tool.inputSchema.additionalProperties])).toEqual(tools.map((tool) => [tool.name, false]));
  });

  it('request_refund sends a routine refund; the same call again is the same decision, one refund at Stripe', async () => {
    const pi = await payment(10_000);
    const args = { request_id: 'mcp-1', payment_intent: pi, amount: 2_000, reason: 'cracked jar' };
    const first = await call('request_refund', args);
    expect(first.isError).toBe(false);
    expect(first.structured).toMatchObject({ request_id: 'mcp-1', status: 'COMMITTED', refund: expect.stringMatching(/^re_/) });
    expect(first.text).toMatch(/^Sent \(COMMITTED\): the refund was sent to Stripe once\./);
    expect(first.text).toMatch(/This is final/);
    const again = await call('request_refund', args);
    expect(again.structured).toMatchObject({ status: 'DUPLICATE_IGNORED', effect_id: first.structured.effect_id, refund: first.structured.refund });
    expect(again.text).toMatch(/^Already sent; nothing was sent twice \(DUPLICATE_IGNORED\)/);
    expect(await sandbox.refunds(pi)).toHaveLength(1);
    expect((await call('get_refund', { request_id: 'mcp-1' })).structured).toMatchObject({ status: 'COMMITTED' });
  });

  it('an over-limit refund is queued, in words that say a person must decide and how to wait', async () => {
    const pi = await payment(10_000);
    const queued = await call('request_refund', { request_id: 'mcp-2', payment_intent: pi, amount: 8_000 });
    expect(queued.isError).toBe(false);
    expect(queued.structured).toMatchObject({ status: 'QUEUED', refund: null });
    expect(queued.text).toMatch(/^Waiting for a person \(QUEUED\): an approver must decide: /);
    expect(queued.text).toMatch(/Not final yet: call wait_for_decision with request_id "mcp-2"/);
    expect(await sandbox.refunds(pi)).toEqual([]);
  });

  it('wait_for_decision returns within a short timeout, not final, while nobody decides; once approved it is final', async () => {
    const progress: number[] = [];
    const started = Date.now();
    const raw = await mcp.callTool({ name: 'wait_for_decision', arguments: { request_id: 'mcp-2', timeout_seconds: 1 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    const waited = CallToolResultOf(raw);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(waited.structuredContent).toMatchObject({ status: 'QUEUED' });
    expect(waited.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^Still waiting: QUEUED after 1 s\. It is not final yet\./) });
    // One progress report a read: the first at once, and one more when the jittered second read
    // (at 0.8 to 1 s) comes before the 1 s timeout.
    expect(progress[0]).toBe(1);
    expect(progress.length).toBeLessThanOrEqual(2);

    const api = clientFor(server.url);
    const effectId = String(waited.structuredContent?.effect_id);
    const item = (await api.as('ana', 'GET', `/api/items/${effectId}`)).body as { item: { escalation: string } };
    expect((await api.as('ana', 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.item.escalation })).body).toMatchObject({
      status: 'COMMITTED',
    });
    const decided = await call('wait_for_decision', { request_id: 'mcp-2', timeout_seconds: 5 });
    expect(decided.structured).toMatchObject({ status: 'COMMITTED' });
    expect(decided.text).toMatch(/^Sent \(COMMITTED\)/);
  });

  it('the same request_id with another amount is a tool error with conflicting_payload and both payloads', async () => {
    const pi = await payment(10_000);
    await call('request_refund', { request_id: 'mcp-3', payment_intent: pi, amount: 1_000 });
    const conflict = await call('request_refund', { request_id: 'mcp-3', payment_intent: pi, amount: 1_500 });
    expect(conflict.isError).toBe(true);
    expect(conflict.text).toMatch(/^conflicting_payload \(HTTP 409\): request mcp-3 was already made with another amount/);
    expect(conflict.text).toContain(`Recorded: ${pi}, amount 1000, no reason, no flags.`);
    expect(conflict.text).toContain(`Offered: ${pi}, amount 1500, no reason, no flags.`);
    expect(conflict.structured).toMatchObject({ status: 'REFUSED:conflicting_payload', recorded: { amount: 1_000 }, offered: { amount: 1_500 } });
  });

  it("request_refund takes the currency the model worked the amount out in: another than the payment's is a tool error with currency_mismatch, and nothing is sent", async () => {
    const pi = await payment(10_000);
    const wrong = await call('request_refund', { request_id: 'mcp-5', payment_intent: pi, amount: 2_000, currency: 'jpy' });
    expect(wrong.isError).toBe(true);
    expect(wrong.text).toMatch(/^currency_mismatch \(HTTP 422\): currency: the request says jpy, but payment pi_\w+ is in usd .*nothing was refunded\.$/);
    expect(await sandbox.refunds(pi)).toEqual([]);
    const right = await call('request_refund', { request_id: 'mcp-5', payment_intent: pi, amount: 2_000, currency: 'usd' });
    expect(right.structured).toMatchObject({ status: 'COMMITTED', currency: 'usd' });
  });

  it('verify_receipt says a receipt is valid; a tampered one is not, with its problems', async () => {
    const pi = await payment(10_000);
    const sent = await call('request_refund', { request_id: 'mcp-4', payment_intent: pi, amount: 1_100 });
    const valid = await call('verify_receipt', { effect_id: sent.structured.effect_id });
    expect(valid.isError).toBe(false);
    expect(valid.text).toMatch(/^Valid: the receipt of effect [0-9a-f]{12} verifies: signed by key [0-9a-f]+, the refund happened once/);
    expect(valid.structured).toMatchObject({ valid: true, signed: true });

    const receipt = await (await fetch(`${server.url}${sent.structured.receipt}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } })).json();
    receipt.entries[0].agent = 'someone-else';
    const tampered = await call('verify_receipt', { receipt: JSON.stringify(receipt) });
    expect(tampered.isError).toBe(false);
    expect(tampered.text).toMatch(/^Not valid: the receipt of effect [0-9a-f]{12} fails \d+ check\(s\)\.\n1\. /);
    expect(tampered.structured).toMatchObject({ valid: false });
  });

  it('arguments outside the schema are refused before Interlock is asked: no request_id, or both effect_id and receipt', async () => {
    const missing = await call('request_refund', { payment_intent: 'pi_abc', amount: 100 });
    expect(missing.isError).toBe(true);
    expect(missing.text).toMatch(/request_id/);
    const both = await call('verify_receipt', { effect_id: '0123456789ab', receipt: '{}' });
    expect(both).toMatchObject({ isError: true, text: 'invalid_arguments: give either effect_id or receipt, not both and not neither' });
  });

  it('an argument a tool does not take is a tool error naming it, and nothing reaches Interlock: dry_run is not a dry run', async () => {
    const pi = await payment(10_000);
    for (const [name, value] of [
      ['dry_run', true],
      ['metadata', { ticket: '4471' }],
    ] as const) {
      const refused = await call('request_refund', { request_id: `mcp-unknown-${name}`, payment_intent: pi, amount: 1_000, [name]: value });
      expect({ isError: refused.isError, status: refused.structured.status }).toEqual({ isError: true, status: undefined });
      expect(refused.text).toContain(`Invalid arguments for tool request_refund: ${name}: unknown argument; request_refund takes request_id, payment_intent, amount,`);
      expect(refused.text).toContain('Nothing was sent to Interlock.');
      expect((await call('get_refund', { request_id: `mcp-unknown-${name}` })).text).toMatch(/^not_found \(HTTP 404\): /);
    }
    const waited = await call('wait_for_decision', { request_id: 'mcp-1', timeout_seconds: 1, poll_ms: 10 });
    expect(waited).toMatchObject({ isError: true, text: expect.stringContaining('poll_ms: unknown argument; wait_for_decision takes request_id, timeout_seconds.') });
    expect(await sandbox.refunds(pi)).toEqual([]);
  });

  it('a request_id of 200 characters with / and : is read back by get_refund and wait_for_decision', async () => {
    const pi = await payment(10_000);
    const requestId = `mcp/5:${'a'.repeat(190)}/b:c`;
    expect(requestId).toHaveLength(200);
    const sent = await call('request_refund', { request_id: requestId, payment_intent: pi, amount: 900 });
    expect(sent.structured).toMatchObject({ request_id: requestId, status: 'COMMITTED' });
    const read = await call('get_refund', { request_id: requestId });
    expect([read.isError, read.structured.effect_id]).toEqual([false, sent.structured.effect_id]);
    const waited = await call('wait_for_decision', { request_id: requestId, timeout_seconds: 1 });
    expect([waited.isError, waited.structured.status]).toEqual([false, 'COMMITTED']);
  });

  it('get_refund of a request never made is a tool error with not_found', async () => {
    const unknown = await call('get_refund', { request_id: 'never-made' });
    expect(unknown).toMatchObject({ isError: true, text: expect.stringMatching(/^not_found \(HTTP 404\): /) });
  });
});

describe('MCP server: start-up and credentials', () => {
  it('a wrong token makes a tool call an error with unauthorized, never a stack', async () => {
    const refused = await call('get_refund', { request_id: 'mcp-1' }, stranger);
    expect(refused).toMatchObject({ isError: true, text: expect.stringMatching(/^unauthorized \(HTTP 401\): /) });
    expect(refused.text).not.toMatch(/\n\s+at /);
  });

  it('without INTERLOCK_AGENT_TOKEN it says so on stderr, prints nothing on stdout, and exits 2', async () => {
    const { code, stdout, stderr } = await tokenless;
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).toMatch(/INTERLOCK_AGENT_TOKEN is required/);
  });
});
