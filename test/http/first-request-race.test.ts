import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { jsonEqual } from '../../shared/json.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Two first requests under one request id with other payloads, sent at once: whichever binds
// first is the request; the other is answered 409 conflicting_payload and leaves no trace in the
// chain (nothing it asked for is written, escalated or sent), however the race falls.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

const ROUNDS = 6;

describe('two first requests racing under one request id', () => {
  it.each([
    ['two routine amounts', { amount: 1_000 }, { amount: 2_000 }],
    ['the same amount, another reason', { amount: 1_000, reason: 'cracked' }, { amount: 1_000, reason: 'late' }],
    ['two amounts a person must decide', { amount: 8_000 }, { amount: 8_100 }],
    ['a routine amount and one a person must decide', { amount: 1_000 }, { amount: 8_000 }],
  ] as [string, { amount: number; reason?: string }, { amount: number; reason?: string }][])('%s: one is the request, the other 409 with nothing of it in the chain', async (_name, one, two) => {
    for (let round = 0; round < ROUNDS; round++) {
      const pi = await world.payment(50_000);
      const requestId = `race-${_name.replaceAll(' ', '-').replaceAll(',', '')}-${round}`;
      const bodies = [one, two].map((payload) => ({ request_id: requestId, payment_intent: pi, ...payload }));
      const answers = await Promise.all(bodies.map((body) => world.agent('POST', '/v1/refunds', body)));
      const losers = answers.filter((a) => a.statusCode === 409);
      expect(losers).toHaveLength(1);
      expect(losers[0]!.json()).toMatchObject({ error: { code: 'conflicting_payload' }, status: 'REFUSED:conflicting_payload' });
      const winner = bodies[answers.findIndex((a) => a.statusCode !== 409)]!;
      const chain: Entry[] = await world.services.journal.entries(answers.find((a) => a.statusCode !== 409)!.json().effect_id);
      for (const entry of chain.filter((e) => e.kind === 'PROPOSED')) {
        expect(entry.effect).toEqual({ payment_intent: pi, amount: winner.amount });
        expect(jsonEqual(entry.request ?? null, { id: requestId, agent: 'support-bot', payment_intent: pi, amount: winner.amount, flags: [], ...(winner.reason === undefined ? {} : { reason: winner.reason }) })).toBe(true);
      }
      expect(chain.filter((e) => e.kind === 'REFUSED')).toEqual([]);
      expect(chain.filter((e) => e.kind === 'ESCALATED').length).toBeLessThanOrEqual(1);
      for (const refund of world.sandbox.refunds(pi)) expect(refund.amount).toBe(winner.amount);
    }
  });
});
