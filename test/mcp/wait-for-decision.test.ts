import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMcpServer } from '../../server/mcp/tools.ts';
import { createInterlockClient } from '../../shared/client/index.ts';

/**
 * `wait_for_decision` against the SDK's own Client with its default settings, over the in-memory
 * transport, on one simulated clock: the client's request timeout (the SDK's real default, 60 s),
 * the server's waits and the moment a person decides all run on vitest's fake timers, so a 90 s
 * decision is waited out in milliseconds.
 */

/** A person decides the request 90 s after it was asked. */
const DECIDED_AFTER_MS = 90_000;

/** Interlock as the typed client sees it: QUEUED (202) until the decision, then COMMITTED (200). */
function interlockDecidingAt(decidedAtMs: number) {
  const reads: number[] = [];
  const fetch = async (input: RequestInfo | URL): Promise<Response> => {
    expect(String(input)).toBe('http://interlock.test/v1/refunds/case-90');
    reads.push(Date.now());
    const decided = Date.now() >= decidedAtMs;
    const answer = {
      request_id: 'case-90',
      effect_id: '0123456789ab',
      status: decided ? 'COMMITTED' : 'QUEUED',
      why: decided ? 'the refund was sent to Stripe once' : 'an approver must decide: amount at most $50.00',
      refund: decided ? 're_90' : null,
      changes: [],
      repairs: [],
      receipt: '/v1/receipts/0123456789ab',
    };
    return new Response(JSON.stringify(answer), { status: decided ? 200 : 202, headers: { 'content-type': 'application/json' } });
  };
  return { reads, fetch };
}

let mcp: Client;
let interlock: ReturnType<typeof interlockDecidingAt>;
let startMs: number;

beforeEach(async () => {
  vi.useFakeTimers();
  startMs = Date.now();
  interlock = interlockDecidingAt(startMs + DECIDED_AFTER_MS);
  // Created under the fake timers, so the typed client sleeps and reads the time on the simulated clock.
  const client = createInterlockClient({ baseUrl: 'http://interlock.test', token: 'sk_agent_test', fetch: interlock.fetch });
  const server = createMcpServer(client, () => {});
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  mcp = new Client({ name: 'interlock-test', version: '1.0.0' });
  await Promise.all([server.connect(serverSide), mcp.connect(clientSide)]);
});

afterEach(async () => {
  await mcp.close();
  vi.useRealTimers();
});

/** One tool call with the client's default request options, the simulated clock run until it settles: its text, or the error it threw. */
async function callWaiting(args: Record<string, unknown>) {
  const calledAtMs = Date.now();
  let settled = false;
  const outcome = mcp
    .callTool({ name: 'wait_for_decision', arguments: args })
    .then(
      (result) => ({ result: result as CallToolResult }),
      (error: Error) => ({ error }),
    )
    .finally(() => {
      settled = true;
    });
  while (!settled) await vi.advanceTimersByTimeAsync(100);
  const tookSeconds = Math.round((Date.now() - calledAtMs) / 1000);
  const ended = await outcome;
  if ('error' in ended) return { tookSeconds, error: ended.error.message };
  const text = ended.result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
  return { tookSeconds, error: undefined, isError: ended.result.isError === true, status: ended.result.structuredContent?.status, text };
}

describe('wait_for_decision under the SDK client default request timeout', () => {
  it('the client gives up after 60 s unless told otherwise', () => {
    expect(DEFAULT_REQUEST_TIMEOUT_MSEC).toBe(60_000);
  });

  it('a decision taken after 90 s is waited out in consecutive default calls of 30 s, each answered before the client gives up', async () => {
    const calls = [];
    for (let attempt = 0; attempt < 3; attempt++) calls.push(await callWaiting({ request_id: 'case-90' }));
    expect(calls.map(({ tookSeconds, error, status }) => ({ tookSeconds, error, status }))).toEqual([
      { tookSeconds: 30, error: undefined, status: 'QUEUED' },
      { tookSeconds: 30, error: undefined, status: 'QUEUED' },
      { tookSeconds: 30, error: undefined, status: 'COMMITTED' },
    ]);
    expect(calls[0]?.text).toMatch(/^Still waiting: QUEUED after 30 s\. /);
    expect(calls[0]?.text).toContain('Call wait_for_decision again with the same request_id "case-90" to keep waiting; one call waits at most 45 s.');
    expect(calls[2]?.text).toMatch(/^Sent \(COMMITTED\): the refund was sent to Stripe once\./);
    expect(Date.now() - startMs).toBe(DECIDED_AFTER_MS);
  });

  it('timeout_seconds 90 is capped at 45 and answered in words, never timed out by the client; the next call sees the decision', async () => {
    const capped = await callWaiting({ request_id: 'case-90', timeout_seconds: 90 });
    expect(capped).toMatchObject({ tookSeconds: 45, error: undefined, isError: false, status: 'QUEUED' });
    expect(capped.text).toMatch(/^Still waiting: QUEUED after 45 s \(timeout_seconds 90 is more than one call waits: at most 45 s\)\. /);
    const decided = await callWaiting({ request_id: 'case-90', timeout_seconds: 90 });
    expect(decided).toMatchObject({ tookSeconds: 45, error: undefined, isError: false, status: 'COMMITTED' });
  });

  it('the tool list says the default and the cap', async () => {
    const { tools } = await mcp.listTools();
    const wait = tools.find((tool) => tool.name === 'wait_for_decision');
    expect(wait?.inputSchema.properties?.timeout_seconds).toMatchObject({ type: 'integer', minimum: 0, default: 30 });
    expect(wait?.description).toMatch(/at most 45 s/);
  });
});
