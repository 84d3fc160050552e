import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scoreboard } from '../../shared/api.ts';
import { createInterlockClient, type InterlockClient, waitingForOf } from '../../shared/client/index.ts';
import { describeAnswer } from '../../server/mcp/words.ts';
import { chainState, waitsItsTurn } from '../../server/inbox/state.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

/**
 * A request waiting its turn for Stripe's rate budget and one waiting for a person are both
 * `202 QUEUED`; `waiting_for` tells them apart, the tools word each wait truly, and the scoreboard
 * never counts a wait for Stripe as money waiting for a person.
 */

let dir: string;
let sandbox: Sandbox;
let world: AppWorld;
let client: InterlockClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-waiting-for-'));
  // Stripe's test-mode limits at the sandbox, and a budget of two calls a second: a routine refund
  // takes both, so the requests right behind it wait their turn.
  sandbox = await startSandbox({ rateLimits: 'test', settle: 'at_create', clockMs: () => Date.now() });
  const config = testConfig({ stripe: { mode: 'sandbox', rateLimits: { share: 1, globalPerSecond: 2, endpointPerSecond: 2 } } });
  world = await buildAppWorld({ dir, sandbox, config });
  client = createInterlockClient({ baseUrl: await world.app.listen({ port: 0, host: '127.0.0.1' }), token: AGENT_TOKEN });
}, 60_000);

afterAll(async () => {
  await world?.close();
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function board(): Promise<Scoreboard> {
  const fin = await world.login('fin');
  return (await world.as(fin, 'GET', '/api/scoreboard')).json().board as Scoreboard;
}

async function queueEmptied(requestIds: readonly string[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answers = await Promise.all(requestIds.map((id) => client.getRefund(id)));
    const chains = await Promise.all(answers.map((a) => world.services.journal.entries(a.answer.effect_id)));
    if (world.services.turns.length === 0 && !chains.some(waitsItsTurn)) return;
    if (Date.now() > deadline) throw new Error('the turn queue did not empty in 30 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('what a queued request waits for', () => {
  it('says stripe for a turn to reach Stripe, person for an approver, and the scoreboard counts them apart', async () => {
    const pays = await Promise.all([10_000, 10_000, 10_000, 10_000].map((cents) => world.payment(cents)));
    const routine = await client.requestRefund({ request_id: 'wf-routine', payment_intent: pays[0]!, amount: 2_000 });
    expect(routine.answer).toMatchObject({ status: 'COMMITTED', waiting_for: null });

    const waiting = [
      ['wf-turn-1', pays[1]!, 3_000],
      ['wf-person', pays[2]!, 8_000],
      ['wf-turn-2', pays[3]!, 4_000],
    ] as const;
    const effectIds = new Map<string, number>();
    for (const [id, pi, amount] of waiting) {
      const asked = await client.requestRefund({ request_id: id, payment_intent: pi, amount });
      effectIds.set(asked.answer.effect_id, amount);
      expect(asked.httpStatus).toBe(202);
      expect(asked.answer).toMatchObject({ status: 'QUEUED', waiting_for: 'stripe' });
      expect(waitingForOf(asked.answer)).toBe('stripe');
      // The words a model reads: a turn to reach Stripe, never a person.
      const text = describeAnswer(asked);
      expect(text).toMatch(/^Waiting its turn to reach Stripe; no person is involved \(QUEUED\): it is waiting its turn to reach Stripe/);
      expect(text).not.toMatch(/person \(QUEUED\)|an approver/);
    }

    // While some wait for Stripe, the scoreboard counts them apart from those a person has: read
    // where each chain stands before and after the board, until nothing moved in between.
    const standing = async () => {
      const out: string[] = [];
      for (const effectId of effectIds.keys()) {
        const chain = await world.services.journal.entries(effectId);
        out.push(waitsItsTurn(chain) ? 'stripe' : chainState(chain));
      }
      return out;
    };
    let during: Scoreboard;
    let stood: string[];
    for (;;) {
      stood = await standing();
      during = await board();
      if (JSON.stringify(await standing()) === JSON.stringify(stood)) break;
    }
    const amounts = [...effectIds.values()];
    const sumWhere = (what: string) => stood.reduce((sum, s, i) => sum + (s === what ? amounts[i]! : 0), 0);
    expect(sumWhere('stripe')).toBeGreaterThan(0);
    const withPerson = stood.filter((s) => s === 'ESCALATED').length;
    expect(during).toMatchObject({ requests: 4, escalated: withPerson, open: withPerson });
    // A request waiting its turn has no facts yet, so no currency: it counts under `unknown` until its read.
    const usd = during.money.usd!;
    const unread = during.money.unknown!;
    expect(usd.exposure_queued_minor).toBe(sumWhere('ESCALATED'));
    expect(unread.exposure_queued_minor).toBe(0);
    expect(unread.exposure_waiting_stripe_minor).toBe(sumWhere('stripe'));
    for (const money of [usd, unread]) {
      expect(money.exposure_minor).toBe(money.exposure_queued_minor + money.exposure_waiting_stripe_minor + money.exposure_approved_minor);
    }
    const stillWaiting = (await client.getRefund('wf-turn-2')).answer;
    if (stillWaiting.status === 'QUEUED') expect(stillWaiting.waiting_for).toBe('stripe');

    await queueEmptied(waiting.map(([id]) => id));
    const person = await client.getRefund('wf-person');
    expect(person.answer).toMatchObject({ status: 'QUEUED', waiting_for: 'person' });
    expect(describeAnswer(person)).toMatch(/^Waiting for a person \(QUEUED\): an approver must decide: /);
    expect((await client.getRefund('wf-turn-1')).answer).toMatchObject({ status: 'COMMITTED', waiting_for: null });
    const after = await board();
    expect(after).toMatchObject({ requests: 4, cleared_no_person: 3, escalated: 1, open: 1 });
    expect(after.money.usd).toMatchObject({ exposure_queued_minor: 8_000, exposure_waiting_stripe_minor: 0, exposure_minor: 8_000 });
  }, 60_000);
});
