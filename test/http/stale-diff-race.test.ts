import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DecisionAnswer, ItemDetail, RefundAnswer } from '../../shared/api.ts';
import { createInterlockClient, type InterlockClient } from '../../shared/client/index.ts';
import { verifyCallback } from '../../shared/client/callbacks.ts';
import { createMcpServer } from '../../server/mcp/tools.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld, DEMO_PASSWORD, fastForwardScheduler, testConfig } from '../support/app-world.ts';
import { type HookReceiver, startHookReceiver } from '../support/outbox-receiver.ts';

/**
 * A payment refunded by hand in Stripe's dashboard (the sandbox's control API) while a person
 * approves its refund: the display read of the payment may show the item again on the new facts
 * first, and the person approves what they now see; or the approval goes first and its send reads
 * the refund. Either way the agent is told what changed since it asked, as the item page shows it:
 * in its answer, its tool's text, and the callback once the item is final.
 */

/**
 * 25 races: before the fix, 8 of 50 told the agent nothing of what changed, so 25 races miss that
 * bug once in a hundred runs (0.84^25). 50 took 83 s of a loaded `npm test`; STALE_RACE_TRIES=200
 * runs more.
 */
const TRIES = Number(process.env.STALE_RACE_TRIES ?? 25);
const CALLBACK_SECRET = 'whsec_stale_diff_callback_secret';

let world: AppWorld;
let base: string;
let client: InterlockClient;
let mcp: Client;
let hook: HookReceiver;
let person: { cookie: string; csrf: string };

beforeAll(async () => {
  hook = await startHookReceiver();
  const config = testConfig();
  config.notifications = {
    ...config.notifications,
    agents: { [config.agents[0]!.name]: { url: hook.url, secret: CALLBACK_SECRET } },
    callbackAllowPrivate: ['127.0.0.1'],
  };
  world = await buildAppWorld({ config, factsScheduler: fastForwardScheduler() });
  base = await world.app.listen({ port: 0, host: '127.0.0.1' });
  client = createInterlockClient({ baseUrl: base, token: AGENT_TOKEN });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(client, () => {}).connect(serverSide);
  mcp = new Client({ name: 'stale-diff-race', version: '1.0.0' });
  await mcp.connect(clientSide);
  const login = await fetch(`${base}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ana', password: DEMO_PASSWORD }) });
  person = { cookie: String(login.headers.get('set-cookie')).split(';')[0]!, csrf: ((await login.json()) as { csrf_token: string }).csrf_token };
}, 60_000);

afterAll(async () => {
  await mcp?.close();
  await world?.close();
  await hook?.close();
});

async function asPerson<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const response = await fetch(base + path, {
    method,
    headers: { cookie: person.cookie, 'x-csrf-token': person.csrf, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as T;
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

async function control(path: string, body: object): Promise<{ id: string }> {
  const response = await fetch(`${world.sandbox.url}/_sandbox/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await response.json()) as { id: string };
}

/** The item page as the approver reads it, once its read of the payment now is in (page reads are paced). */
async function itemPage(effectId: string): Promise<ItemDetail> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await asPerson<ItemDetail>('GET', `/api/items/${effectId}`);
    if (page.facts_now !== null) return page;
    if (Date.now() > deadline) throw new Error(`the item page of ${effectId} never read the payment: ${page.facts_now_error}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Approve what the page shows; shown again on new facts first, approve what it shows now, as a person would. */
async function approve(effectId: string, escalation: string): Promise<string> {
  const answer = await asPerson<DecisionAnswer>('POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation });
  if (answer.status !== 'SUPERSEDED' || answer.item.item === null) return answer.status;
  return (await asPerson<DecisionAnswer>('POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: answer.item.item.escalation })).status;
}

async function toolText(requestId: string): Promise<string> {
  const result = (await mcp.callTool({ name: 'get_refund', arguments: { request_id: requestId } })) as CallToolResult;
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

async function callbackFor(requestId: string): Promise<RefundAnswer> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`no callback for ${requestId}: ${hook.received.length} received`);
    await world.services.outbox.kick();
    for (const received of hook.received) {
      const body = await verifyCallback(received.body, received.signature, CALLBACK_SECRET);
      if (body.request_id === requestId) return body;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a refund by hand races an approved send', () => {
  it(`tells the agent what changed since it asked, as the item page does, in each of ${TRIES} races`, async () => {
    const emptyAnswers: string[] = [];
    const emptyTexts: string[] = [];
    const emptyCallbacks: string[] = [];
    let stale = 0;
    for (let i = 0; i < TRIES; i++) {
      const requestId = `stale-race-${i}`;
      const pi = (await control('payment-intents', { amountCents: 10_000 })).id;
      const asked = await client.requestRefund({ request_id: requestId, payment_intent: pi, amount: 6_000 });
      expect(asked.answer.status).toBe('QUEUED');
      const effectId = asked.answer.effect_id;
      const shown = (await itemPage(effectId)).item!.escalation;
      // The refund by hand, and the display read of the payment it makes Stripe announce, against the approval and its send.
      const byHand = (async () => {
        await control('hand-refunds', { paymentIntent: pi, amountCents: 5_000 });
        await world.services.currentFacts.refresh(effectId);
      })();
      const approved = (async () => {
        await new Promise((resolve) => setTimeout(resolve, (i % 5) * 8));
        return approve(effectId, shown);
      })();
      const [, status] = await Promise.all([byHand, approved]);
      await world.services.currentFacts.idle();
      if (status !== 'REFUSED:stale_premise') continue;
      stale += 1;
      const page = await itemPage(effectId);
      expect(page.changes.length).toBeGreaterThan(0);
      const answer = (await client.getRefund(requestId)).answer;
      if (answer.changes.length === 0) emptyAnswers.push(requestId);
      if (!(await toolText(requestId)).includes('What changed:')) emptyTexts.push(requestId);
      // The person rejects it: the agent's callback carries the final answer.
      const now = (await itemPage(effectId)).item!.escalation;
      const rejected = await asPerson<DecisionAnswer>('POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation: now, reason: 'Refunded by hand already' });
      expect(rejected.status, JSON.stringify(rejected).slice(0, 300)).toBe('REJECTED');
      if ((await callbackFor(requestId)).changes.length === 0) emptyCallbacks.push(requestId);
    }
    console.log(`stale refusals ${stale} of ${TRIES}; with no diff: answers ${emptyAnswers.length}, tool texts ${emptyTexts.length}, callbacks ${emptyCallbacks.length}`);
    expect(stale).toBeGreaterThan(TRIES / 2);
    expect({ emptyAnswers, emptyTexts, emptyCallbacks }).toEqual({ emptyAnswers: [], emptyTexts: [], emptyCallbacks: [] });
  }, 240_000);
});
