import { afterEach, describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { limits } from '../../shared/limits.ts';
import { AppClock } from '../../server/app/clock.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { recoverInFlight } from '../../server/app/services.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The x-request-id of an agent's call is journaled with its request (the PROPOSED), so an
// operator goes from a journal entry to its log lines; it is never part of what is sent. A Stripe
// call's parameters are a function of the DISPATCHED entry alone, so a resend under the same
// idempotency key, whichever call led to it, is the same request to Stripe: were it not, Stripe
// would refuse the resend (400 idempotency_error, as the sandbox does) and the refund would hang.

let world: AppWorld | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

function ask(w: AppWorld, xRequestId: string, payload: object) {
  return w.app.inject({ method: 'POST', url: '/v1/refunds', headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'x-request-id': xRequestId }, payload });
}

describe('x-request-id in the journal', () => {
  it('is kept on the PROPOSED of the call that asked, and on nothing that is sent', async () => {
    world = await buildAppWorld();
    const pi = await world.payment(10_000);
    const answer = (await ask(world, 'agent-trace-1', { request_id: 'journaled-1', payment_intent: pi, amount: 1_000 })).json();
    expect(answer.status).toBe('COMMITTED');
    const chain: Entry[] = await world.services.journal.entries(answer.effect_id);
    const proposed = chain.filter((e) => e.kind === 'PROPOSED');
    expect(proposed.map((e) => e.http_request_id)).toEqual(['agent-trace-1']);
    const dispatched = chain.find((e) => e.kind === 'DISPATCHED')!;
    expect(JSON.stringify(dispatched)).not.toContain('agent-trace-1');
    expect(world.sandbox.refunds(pi).map((r) => r.metadata)).toEqual([{ [EFFECT_METADATA_KEY]: answer.effect_id }]);
  });

  it('a resend under the same idempotency key sends the same parameters, whatever x-request-id the calls came with', async () => {
    let offsetMs = 0;
    world = await buildAppWorld({ clock: new AppClock(() => Date.now() + offsetMs) });
    const pi = await world.payment(10_000);
    // Stripe makes the refund, and the process dies before it journals the outcome: the dispatch stays open.
    world.services.gate.killHook = (point) => {
      if (point === 'after_send') throw new SimulatedCrash('the process died before it journaled the refund');
    };
    const first = (await ask(world, 'first-call', { request_id: 'resent-1', payment_intent: pi, amount: 2_500 })).json();
    expect(first.status).toBe('IN_FLIGHT');
    expect(world.sandbox.refunds(pi)).toHaveLength(1);
    world.services.gate.killHook = undefined;
    // The agent asks again under another x-request-id; then recovery resends under the same key.
    const again = await ask(world, 'second-call', { request_id: 'resent-1', payment_intent: pi, amount: 2_500 });
    expect(again.headers['x-request-id']).toBe('second-call');
    offsetMs += limits.claimTtlMs + 1_000;
    const recovered = await recoverInFlight(world.services);
    // Stripe replayed the first answer: the parameters were the same, or it would have refused them.
    expect(Object.fromEntries(recovered)).toEqual({ [first.effect_id]: 'COMMITTED_BY_RETRY' });
    expect(world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([2_500]);
    const chain: Entry[] = await world.services.journal.entries(first.effect_id);
    expect(chain.filter((e) => e.kind === 'DISPATCHED')).toHaveLength(1);
    expect(chain.find((e) => e.kind === 'PROPOSED')?.http_request_id).toBe('first-call');
  });
});
