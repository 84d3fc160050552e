import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError, createInterlockClient, type InterlockClient, isInterlockClientError, TimeoutError } from '../../shared/client/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { type ListeningWorld, startListeningWorld } from './listening-world.ts';

/** The typed client's jittered polling, its AbortSignal and its per-call timeout, against the whole server over real HTTP. */

let live: ListeningWorld;
let client: InterlockClient;

beforeAll(async () => {
  live = await startListeningWorld();
  client = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN });
});
afterAll(async () => live.close());

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

/** What a call threw. */
async function thrown(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => null,
    (e: unknown) => e,
  );
}

const BACKOFF = [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000];

describe('typed client: jitter', () => {
  it('takes up to a fifth off each backoff wait at random, never more, and never waits longer than the backoff', async () => {
    const pi = await live.world.payment(10_000);
    await client.requestRefund({ request_id: 'jitter-1', payment_intent: pi, amount: 9_000 });
    const half = fakeClock();
    const halfway = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN, now: half.now, sleep: half.sleep, random: () => 0.5 });
    expect(await halfway.waitForDecision('jitter-1', { timeoutMs: 91_000 })).toMatchObject({ final: false, answer: { status: 'QUEUED' } });
    expect(half.sleeps.slice(0, 7)).toEqual(BACKOFF.map((ms) => ms * 0.9));
    // With the default random, agents that started together do not poll in step.
    const schedules: number[][] = [];
    for (let agent = 0; agent < 3; agent++) {
      const clock = fakeClock();
      const spread = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN, now: clock.now, sleep: clock.sleep });
      await spread.waitForDecision('jitter-1', { timeoutMs: 40_000 });
      clock.sleeps.slice(0, 5).forEach((ms, i) => {
        expect(ms).toBeGreaterThanOrEqual(BACKOFF[i]! * 0.8);
        expect(ms).toBeLessThanOrEqual(BACKOFF[i]!);
      });
      schedules.push(clock.sleeps.slice(0, 5));
    }
    expect(new Set(schedules.map((s) => s.join())).size).toBe(3);
  });

  it('still waits at least what Retry-After asks: jitter only shortens the backoff', async () => {
    const clock = fakeClock();
    const waiting = createInterlockClient({
      baseUrl: live.url,
      token: AGENT_TOKEN,
      now: clock.now,
      sleep: clock.sleep,
      random: () => 0.99,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        // As a server asks while a request waits its turn for Stripe.
        return new Response(await response.text(), { status: response.status, headers: { 'content-type': 'application/json', 'retry-after': '1' } });
      },
    });
    await waiting.waitForDecision('jitter-1', { timeoutMs: 2_500 });
    expect(clock.sleeps[0]).toBe(1_000);
  });
});

describe('typed client: per-call timeout', () => {
  it('gives a call up with TimeoutError after its timeoutMs; the same request_id again is safe and sends once', async () => {
    const pi = await live.world.payment(10_000);
    live.world.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 1_500, times: 1 });
    const startedMs = Date.now();
    const error = await thrown(client.requestRefund({ request_id: 'timeout-1', payment_intent: pi, amount: 2_000 }, { timeoutMs: 200 }));
    expect(Date.now() - startedMs).toBeLessThan(1_000);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(isInterlockClientError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'timeout', timeoutMs: 200 });
    const again = await client.requestRefund({ request_id: 'timeout-1', payment_intent: pi, amount: 2_000 });
    const settled = again.final ? again : await client.waitForDecision('timeout-1', { timeoutMs: 10_000 });
    expect(settled.answer.status).toMatch(/^COMMITTED/);
    expect(live.world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([2_000]);
  });

  it("the client's callTimeoutMs holds for every call that does not name its own", async () => {
    const pi = await live.world.payment(10_000);
    live.world.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 1_500, times: 1 });
    const hurried = createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN, callTimeoutMs: 250 });
    expect(await thrown(hurried.requestRefund({ request_id: 'timeout-2', payment_intent: pi, amount: 2_000 }))).toMatchObject({ code: 'timeout', timeoutMs: 250 });
    expect(() => createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN, callTimeoutMs: 0 })).toThrow(TypeError);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    expect((await client.getRefund('timeout-2')).answer.status).toMatch(/^COMMITTED/);
  });
});

describe('typed client: AbortSignal', () => {
  it('a signal aborted during the call ends it with AbortedError; one aborted before sends nothing', async () => {
    const pi = await live.world.payment(10_000);
    live.world.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 3_000, times: 1 });
    const controller = new AbortController();
    // Aborted once the server holds the request (its send waits on Stripe): a fixed 100 ms could
    // end it before a loaded server had read it, and then nothing is written, as below.
    const entries = await live.world.entryCount();
    const abortOnceHeld = setInterval(() => {
      void live.world.entryCount().then((now) => {
        if (now > entries) controller.abort();
      });
    }, 20);
    const startedMs = Date.now();
    const error = await thrown(client.requestRefund({ request_id: 'abort-1', payment_intent: pi, amount: 2_000 }, { signal: controller.signal }));
    clearInterval(abortOnceHeld);
    expect(Date.now() - startedMs).toBeLessThan(2_000);
    expect(error).toBeInstanceOf(AbortedError);
    expect(error).toMatchObject({ code: 'aborted' });
    // The server goes on with what it was sent: the same request_id settles it, once.
    expect((await client.waitForDecision('abort-1', { timeoutMs: 10_000 })).answer.status).toMatch(/^COMMITTED/);
    expect(live.world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([2_000]);
    const before = await live.world.entryCount();
    const early = await thrown(client.requestRefund({ request_id: 'abort-2', payment_intent: pi, amount: 1_000 }, { signal: AbortSignal.abort() }));
    expect(early).toMatchObject({ code: 'aborted' });
    expect(await thrown(client.getRefund('abort-2'))).toMatchObject({ code: 'not_found' });
    expect(await live.world.entryCount()).toBe(before);
  });

  it('a signal ends waitForDecision while it sleeps, at once', async () => {
    const pi = await live.world.payment(10_000);
    await client.requestRefund({ request_id: 'abort-wait', payment_intent: pi, amount: 9_000 });
    const controller = new AbortController();
    // Aborted 50 ms into the first sleep, once the first read was answered: a fixed 150 ms from the
    // start fell inside that read on a loaded machine (766 ms measured from the start), and timed
    // the read rather than the sleep.
    let abortedMs = 0;
    const sleeps: number[] = [];
    const onWait = ({ sleepMs }: { sleepMs: number }) => {
      sleeps.push(sleepMs);
      setTimeout(() => {
        abortedMs = Date.now();
        controller.abort();
      }, 50);
    };
    const error = await thrown(client.waitForDecision('abort-wait', { timeoutMs: 60_000, signal: controller.signal, onWait }));
    const endedMs = Date.now();
    expect(error).toMatchObject({ code: 'aborted' });
    // It was asleep, in a sleep of at least 800 ms, and ended 50 ms into it: an end within 700 ms of
    // the abort is the signal's, where sleeping it out would end 750 ms or more after it.
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(800);
    expect(abortedMs).toBeGreaterThan(0);
    expect(endedMs - abortedMs).toBeLessThan(700);
  });
});
