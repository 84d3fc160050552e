import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConflictingPayloadError,
  createInterlockClient,
  type InterlockClient,
  type InterlockClientError,
  InterlockError,
  isInterlockClientError,
  NetworkError,
} from '../../shared/client/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { freePort } from '../support/server-process.ts';
import { type ListeningWorld, startListeningWorld } from './listening-world.ts';

/** The typed client against the whole server over real HTTP: every answer and error typed by its code. */

let live: ListeningWorld;
let client: InterlockClient;

beforeAll(async () => {
  live = await startListeningWorld();
  client = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN });
});
afterAll(async () => live.close());

/** No jitter: each wait is the backoff itself, so the schedule can be read exactly. */
const NO_JITTER = () => 0;

/** A clock that moves only when the client sleeps, and the sleeps it was asked for. */
function fakeClock(startMs = 1_700_000_000_000) {
  let nowMs = startMs;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => nowMs,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      nowMs += ms;
    },
  };
}

/** What a call threw, as the client's typed error. */
async function thrown(call: Promise<unknown>): Promise<InterlockClientError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isInterlockClientError(error)) throw new Error(`expected a typed client error, got ${String(error)}`);
  return error;
}

describe('typed client: asking for refunds', () => {
  it('a routine refund is answered 200 and final; the same request again is the same decision and nothing is sent twice', async () => {
    const pi = await live.world.payment(10_000);
    const request = { request_id: 'client-1', payment_intent: pi, amount: 2_000, reason: 'cracked jar', context_url: 'https://support.example/tickets/1' };
    const first = await client.requestRefund(request);
    expect(first).toMatchObject({ httpStatus: 200, final: true, answer: { request_id: 'client-1', status: 'COMMITTED', changes: [], repairs: [] } });
    expect(first.answer.refund).toMatch(/^re_/);
    const again = await client.requestRefund(request);
    expect(again.answer).toMatchObject({ status: 'DUPLICATE_IGNORED', effect_id: first.answer.effect_id, refund: first.answer.refund });
    expect((await client.getRefund('client-1')).answer).toMatchObject({ status: 'COMMITTED', effect_id: first.answer.effect_id });
    expect(live.world.sandbox.refunds(pi)).toHaveLength(1);
  });

  it('an over-limit refund is answered 202 and not final: QUEUED, with why an approver must decide', async () => {
    const pi = await live.world.payment(10_000);
    const queued = await client.requestRefund({ request_id: 'client-2', payment_intent: pi, amount: 8_000 });
    expect(queued).toMatchObject({ httpStatus: 202, final: false, answer: { status: 'QUEUED', refund: null } });
    expect(queued.answer.why).toMatch(/approver must decide/);
  });

  it('a request id reused with another payload throws ConflictingPayloadError carrying both payloads; nothing is written', async () => {
    const pi = await live.world.payment(10_000);
    await client.requestRefund({ request_id: 'client-3', payment_intent: pi, amount: 1_000 });
    const before = await live.world.entryCount();
    const error = await thrown(client.requestRefund({ request_id: 'client-3', payment_intent: pi, amount: 1_500 }));
    expect(error).toBeInstanceOf(ConflictingPayloadError);
    switch (error.code) {
      case 'conflicting_payload':
        expect([error.status, error.recorded.amount, error.offered.amount]).toEqual([409, 1_000, 1_500]);
        break;
      default:
        throw new Error(`expected conflicting_payload, got ${error.code}`);
    }
    expect(await live.world.entryCount()).toBe(before);
  });

  it("a currency that is not the payment's throws InterlockError currency_mismatch (422); nothing is written", async () => {
    const pi = await live.world.payment(10_000);
    const before = await live.world.entryCount();
    const error = await thrown(client.requestRefund({ request_id: 'client-cur', payment_intent: pi, amount: 1_000, currency: 'eur' }));
    expect(error).toBeInstanceOf(InterlockError);
    expect(error).toMatchObject({ code: 'currency_mismatch', status: 422, message: expect.stringMatching(/^currency: the request says eur, but payment pi_\w+ is in usd/) });
    expect(await live.world.entryCount()).toBe(before);
    const { answer } = await client.requestRefund({ request_id: 'client-cur', payment_intent: pi, amount: 1_000, currency: 'usd' });
    expect([answer.status, answer.currency]).toEqual(['COMMITTED', 'usd']);
  });

  it('a wrong token throws InterlockError unauthorized (401), never a network error', async () => {
    const stranger = createInterlockClient({ baseUrl: live.url, token: 'sk_agent_wrong_token' });
    const error = await thrown(stranger.requestRefund({ request_id: 'client-4', payment_intent: 'pi_x', amount: 1 }));
    expect(error).toBeInstanceOf(InterlockError);
    expect(error).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(error).not.toBeInstanceOf(NetworkError);
  });

  it('a fractional amount throws validation_failed naming the field', async () => {
    const error = await thrown(client.requestRefund({ request_id: 'client-5', payment_intent: 'pi_abc', amount: 10.5 }));
    expect(error).toMatchObject({ code: 'validation_failed', status: 400, message: expect.stringMatching(/^amount/) });
  });

  it('a request with no request_id is refused before anything is sent: the client never makes one up', async () => {
    let calls = 0;
    const counting = createInterlockClient({
      baseUrl: live.url,
      token: AGENT_TOKEN,
      fetch: (input, init) => {
        calls += 1;
        return fetch(input, init);
      },
    });
    const missing = { payment_intent: 'pi_abc', amount: 100 };
    // @ts-expect-error request_id is required by the type as well
    await expect(counting.requestRefund(missing)).rejects.toThrow(/request_id is required/);
    await expect(counting.requestRefund({ ...missing, request_id: '' })).rejects.toBeInstanceOf(TypeError);
    expect(calls).toBe(0);
  });

  it('a request id with / and : is URL-encoded and read back by getRefund; one never made is not_found', async () => {
    const pi = await live.world.payment(10_000);
    const posted = await client.requestRefund({ request_id: 'ticket/77:a', payment_intent: pi, amount: 500 });
    expect((await client.getRefund('ticket/77:a')).answer.effect_id).toBe(posted.answer.effect_id);
    expect(await thrown(client.getRefund('never-made'))).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('a request id of 200 characters with / and : is read back by getRefund and waitForDecision, as POST took it', async () => {
    const pi = await live.world.payment(10_000);
    const requestId = `ticket/77:${'a'.repeat(186)}/b:c`;
    expect(requestId).toHaveLength(200);
    const posted = await client.requestRefund({ request_id: requestId, payment_intent: pi, amount: 500 });
    expect(posted).toMatchObject({ httpStatus: 200, answer: { request_id: requestId, status: 'COMMITTED' } });
    expect((await client.getRefund(requestId)).answer).toMatchObject({ request_id: requestId, effect_id: posted.answer.effect_id });
    const clock = fakeClock();
    const waiting = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN, now: clock.now, sleep: clock.sleep, random: NO_JITTER });
    expect(await waiting.waitForDecision(requestId, { timeoutMs: 0 })).toMatchObject({ final: true, polls: 1, answer: { status: 'COMMITTED' } });
  });

  it('nothing listening throws NetworkError (network_error), never a server code', async () => {
    const nowhere = createInterlockClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, token: AGENT_TOKEN });
    const error = await thrown(nowhere.getRefund('client-1'));
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.code).toBe('network_error');
  });
});

describe('typed client: waiting for a decision', () => {
  it('a queued refund that an approver approves while the client waits comes back final and COMMITTED', async () => {
    const pi = await live.world.payment(10_000);
    const queued = await client.requestRefund({ request_id: 'client-wait-1', payment_intent: pi, amount: 7_000 });
    const clock = fakeClock();
    let approved = '';
    const waiting = createInterlockClient({
      baseUrl: live.url,
      token: AGENT_TOKEN,
      now: clock.now,
      random: NO_JITTER,
      // The approver decides during the client's first sleep.
      sleep: async (ms) => {
        await clock.sleep(ms);
        if (clock.sleeps.length === 1) approved = await live.approve(queued.answer.effect_id);
      },
    });
    const result = await waiting.waitForDecision('client-wait-1');
    expect(approved).toBe('COMMITTED');
    expect(result).toMatchObject({ final: true, httpStatus: 200, polls: 2, waitedMs: 1_000, answer: { status: 'COMMITTED' } });
    expect(live.world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([7_000]);
  });

  it('a refund that stays queued returns at the deadline, not final, after sleeping 1, 2, 4, 8, 16 and the last 29 s', async () => {
    const pi = await live.world.payment(10_000);
    await client.requestRefund({ request_id: 'client-wait-2', payment_intent: pi, amount: 9_000 });
    const clock = fakeClock();
    const waiting = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN, now: clock.now, sleep: clock.sleep, random: NO_JITTER });
    const result = await waiting.waitForDecision('client-wait-2', { timeoutMs: 60_000 });
    expect(result).toMatchObject({ final: false, httpStatus: 202, polls: 7, waitedMs: 60_000, answer: { status: 'QUEUED' } });
    expect(clock.sleeps).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 29_000]);
  });

  it('the backoff doubles to at most 30 s and never sleeps past the deadline', async () => {
    const clock = fakeClock();
    const waiting = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN, now: clock.now, sleep: clock.sleep, random: NO_JITTER });
    const result = await waiting.waitForDecision('client-wait-2', { timeoutMs: 100_500 });
    expect(result.final).toBe(false);
    expect(clock.sleeps).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 9_500]);
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBe(100_500);
  });

  it('a timeout of 0 reads once and returns', async () => {
    const clock = fakeClock();
    const waiting = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN, now: clock.now, sleep: clock.sleep, random: NO_JITTER });
    expect(await waiting.waitForDecision('client-wait-2', { timeoutMs: 0 })).toMatchObject({ final: false, polls: 1, waitedMs: 0 });
    expect(clock.sleeps).toEqual([]);
  });
});
