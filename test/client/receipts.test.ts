import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInterlockClient, type InterlockClient } from '../../shared/client/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { type ListeningWorld, startListeningWorld } from './listening-world.ts';

/** Receipts through the typed client: fetched over HTTP, verified offline against the published keys. */

let live: ListeningWorld;
let client: InterlockClient;
const paths: string[] = [];

beforeAll(async () => {
  live = await startListeningWorld();
  client = createInterlockClient({
    baseUrl: live.url,
    token: AGENT_TOKEN,
    fetch: (input, init) => {
      paths.push(new URL(String(input)).pathname);
      return fetch(input, init);
    },
  });
});
afterAll(async () => live.close());

describe('typed client: receipts', () => {
  it('a committed refund has a receipt that verifies offline: signed, happened once, under live authority', async () => {
    const pi = await live.world.payment(10_000);
    const { answer } = await client.requestRefund({ request_id: 'receipt-1', payment_intent: pi, amount: 1_200 });
    const receipt = await client.getReceipt(answer.effect_id);
    expect(receipt).toMatchObject({ effect_id: answer.effect_id, key_id: live.world.services.signingKey.keyId });
    const report = await client.verifyReceipt(receipt);
    expect(report).toMatchObject({ valid: true, signed: true, happened: true, happened_once: true, authorized_when_fired: true, problems: [] });
  });

  it('a receipt with its amount changed does not verify, and says why; the keys were fetched once', async () => {
    const pi = await live.world.payment(10_000);
    const { answer } = await client.requestRefund({ request_id: 'receipt-2', payment_intent: pi, amount: 1_300 });
    const receipt = await client.getReceipt(answer.effect_id);
    const tampered = structuredClone(receipt);
    const dispatched = tampered.entries.find((entry) => entry.kind === 'DISPATCHED');
    if (dispatched?.kind !== 'DISPATCHED') throw new Error('a committed refund has a DISPATCHED entry');
    dispatched.effect.amount = 9_999;
    const report = await client.verifyReceipt(tampered);
    expect(report.valid).toBe(false);
    expect(report.problems.length).toBeGreaterThan(0);
    expect((await client.verifyReceipt(receipt)).valid).toBe(true);
    expect(paths.filter((path) => path === '/.well-known/interlock-keys')).toHaveLength(1);
  });

  it('a receipt of an effect never made is not_found', async () => {
    await expect(client.getReceipt('0123456789ab')).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });
});
