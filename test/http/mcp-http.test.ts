import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppClock } from '../../server/app/clock.ts';
import { createMcpServer } from '../../server/mcp/tools.ts';
import { createInterlockClient } from '../../shared/client/index.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// MCP over Streamable HTTP at POST /mcp, as a hosted agent sees it: the SDK's own client and
// transport against the app listening on a port, with the agent's bearer token. The tools are the
// stdio server's, word for word; the token, the agents' rates and the API's headers apply first.

/** The app's wall clock runs ahead by this much: moving it on refills the agents' rates. */
let aheadMs = 0;
let world: AppWorld;
let url: string;
let mcp: Client;
/** The agents' rates, small enough to go past in a test, refilled before each. */
const RATE = { burst: 12, perSecond: 0.01 };

beforeAll(async () => {
  const config = testConfig();
  world = await buildAppWorld({
    clock: new AppClock(() => Date.now() + aheadMs),
    config: { ...config, throttle: { ...config.throttle, agentToken: RATE, agentAddress: { ...RATE, burst: 40 } } },
    // One refund request at a time, so a test can hold the one place.
    refundsInFlightMax: 1,
  });
  await world.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(world.app.server.address() as AddressInfo).port}/mcp`;
  mcp = await connect(AGENT_TOKEN);
});
afterAll(async () => {
  await mcp?.close();
  await world?.close();
});
beforeEach(() => {
  aheadMs += 3_600_000;
});

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'hosted-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/** Call a tool: its words, its raw answer, and whether it is a tool error. */
async function call(name: string, args: Record<string, unknown>) {
  const result = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
  return { text, structured: result.structuredContent ?? {}, isError: result.isError === true };
}

/** One JSON-RPC message posted by hand, as a client without the SDK would. */
function post(body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

describe('MCP over Streamable HTTP', () => {
  it('lists the four tools with the names, descriptions and schemas of the stdio server', async () => {
    const stdio = new Client({ name: 'stdio-words', version: '1.0.0' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    // The stdio server's tools over a client that is never called: only their words are read.
    await createMcpServer(createInterlockClient({ baseUrl: 'http://127.0.0.1:9', token: AGENT_TOKEN }), () => {}).connect(serverSide);
    await stdio.connect(clientSide);
    const shape = (tools: Awaited<ReturnType<Client['listTools']>>['tools']) =>
      tools.map(({ name, description, inputSchema, annotations }) => ({ name, description, inputSchema, annotations }));
    const overHttp = (await mcp.listTools()).tools;
    expect(overHttp.map((tool) => tool.name).sort()).toEqual(['get_refund', 'request_refund', 'verify_receipt', 'wait_for_decision']);
    expect(shape(overHttp)).toEqual(shape((await stdio.listTools()).tools));
    expect(mcp.getInstructions()).toBe(stdio.getInstructions());
    await stdio.close();
  });

  it('asks for a refund (COMMITTED), reads it, and a duplicate request_id sends nothing twice', async () => {
    const pi = await world.payment(10_000);
    const args = { request_id: 'http-mcp-1', payment_intent: pi, amount: 2_000, currency: 'usd', reason: 'cracked jar' };
    const sent = await call('request_refund', args);
    expect(sent.isError).toBe(false);
    expect(sent.structured).toMatchObject({ request_id: 'http-mcp-1', status: 'COMMITTED', refund: expect.stringMatching(/^re_/) });
    expect(sent.text).toMatch(/^Sent \(COMMITTED\): the refund was sent to Stripe once\./);
    const again = await call('request_refund', args);
    expect(again.structured).toMatchObject({ status: 'DUPLICATE_IGNORED', effect_id: sent.structured.effect_id, refund: sent.structured.refund });
    expect(await world.sandbox.refunds(pi)).toHaveLength(1);
    // The tool's raw answer is the HTTP API's body, byte for byte.
    const api = await world.agent('GET', '/v1/refunds/http-mcp-1');
    const read = await call('get_refund', { request_id: 'http-mcp-1' });
    expect(read.structured).toEqual(api.json());
    const verified = await call('verify_receipt', { effect_id: sent.structured.effect_id });
    expect(verified.structured).toMatchObject({ valid: true, signed: true });
  });

  it('a refund a person must decide is QUEUED; a short wait reports its progress and answers it still waiting', async () => {
    const pi = await world.payment(10_000);
    const queued = await call('request_refund', { request_id: 'http-mcp-2', payment_intent: pi, amount: 1_000, flags: ['fraud_review'] });
    expect(queued.structured).toMatchObject({ status: 'QUEUED', waiting_for: 'person', refund: null });
    expect(queued.text).toMatch(/^Waiting for a person \(QUEUED\): an approver must decide: /);
    const progress: number[] = [];
    const waited = (await mcp.callTool({ name: 'wait_for_decision', arguments: { request_id: 'http-mcp-2', timeout_seconds: 1 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    })) as CallToolResult;
    expect(waited.structuredContent).toMatchObject({ status: 'QUEUED' });
    expect(waited.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^Still waiting: QUEUED after 1 s\./) });
    // Progress notifications come on the call's own event stream, one a read.
    expect(progress[0]).toBe(1);
    expect(await world.sandbox.refunds(pi)).toEqual([]);
  });

  it('the same request_id with another amount is a tool error with conflicting_payload; an unknown id is not_found', async () => {
    const pi = await world.payment(10_000);
    await call('request_refund', { request_id: 'http-mcp-3', payment_intent: pi, amount: 1_000 });
    const conflict = await call('request_refund', { request_id: 'http-mcp-3', payment_intent: pi, amount: 1_500 });
    expect(conflict.isError).toBe(true);
    expect(conflict.text).toMatch(/^conflicting_payload \(HTTP 409\): request http-mcp-3 was already made with another amount/);
    expect(conflict.structured).toMatchObject({ status: 'REFUSED:conflicting_payload', recorded: { amount: 1_000 }, offered: { amount: 1_500 } });
    const unknown = await call('get_refund', { request_id: 'http-mcp-none' });
    expect([unknown.isError, unknown.text]).toEqual([true, expect.stringMatching(/^not_found \(HTTP 404\): no refund request http-mcp-none/)]);
    expect(await world.sandbox.refunds(pi)).toHaveLength(1);
  });

  it('without a token, or with a wrong one, is 401 with WWW-Authenticate: Bearer and the usual body', async () => {
    for (const headers of [{}, { authorization: 'Bearer sk_agent_wrong_token_1234' }] as Record<string, string>[]) {
      const answer = await post(LIST, headers);
      expect([answer.status, answer.headers.get('www-authenticate'), await answer.json()]).toEqual([
        401,
        'Bearer',
        { error: { code: 'unauthorized', message: 'send Authorization: Bearer <agent token>' } },
      ]);
    }
    await expect(connect('sk_agent_wrong_token_1234')).rejects.toThrow(/401|nauthorized/);
    expect((await fetch(new URL('/.well-known/oauth-protected-resource', url))).status).toBe(404);
  });

  it('carries the request id and the security headers; GET and DELETE are 405 with Allow: POST', async () => {
    const answer = await post(LIST, { authorization: `Bearer ${AGENT_TOKEN}`, 'x-request-id': 'hosted-call-1' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(Object.fromEntries(['x-request-id', 'x-content-type-options', 'x-frame-options', 'referrer-policy', 'content-security-policy'].map((h) => [h, answer.headers.get(h)]))).toEqual({
      'x-request-id': 'hosted-call-1',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    });
    expect(await answer.text()).toContain('"name":"request_refund"');
    for (const method of ['GET', 'DELETE']) {
      const refused = await fetch(url, { method, headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
      expect([refused.status, refused.headers.get('allow'), (await refused.json()).error.code]).toEqual([405, 'POST', 'method_not_allowed']);
    }
  });

  it('a refund asked over MCP while the refund requests in flight are all taken is shed, and nothing is sent', async () => {
    const [busy, shed] = [await world.payment(10_000), await world.payment(10_000)];
    world.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 600, times: 1 });
    const before = await world.entryCount();
    const holding = world.agent('POST', '/v1/refunds', { request_id: 'http-mcp-busy', payment_intent: busy, amount: 1_000 });
    // The POST holds the one place from its arrival; once it has written, its send is under way.
    await expect.poll(() => world.entryCount(), { interval: 20 }).toBeGreaterThan(before);
    const refused = await call('request_refund', { request_id: 'http-mcp-shed', payment_intent: shed, amount: 1_000 });
    expect([refused.isError, refused.text]).toEqual([true, expect.stringMatching(/^rate_limited \(HTTP 429\): the server is working on 1 refund requests already; nothing was written/)]);
    expect((await holding).statusCode).toBe(200);
    expect(await world.sandbox.refunds(shed)).toEqual([]);
  });

  it("an agent over its rate is 429 with Retry-After, whether it calls over MCP or the HTTP API", async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= RATE.burst; i++) statuses.push((await post(LIST, { authorization: `Bearer ${AGENT_TOKEN}` })).status);
    expect(statuses).toEqual([...Array(RATE.burst).fill(200), 429]);
    const refused = await post(LIST, { authorization: `Bearer ${AGENT_TOKEN}` });
    expect([refused.status, refused.headers.get('retry-after'), (await refused.json()).error.code]).toEqual([429, expect.stringMatching(/^\d+$/), 'rate_limited']);
    // One rate for both ways in: the HTTP API is refused too.
    expect((await world.agent('GET', '/v1/refunds/http-mcp-1')).statusCode).toBe(429);
  });
});
