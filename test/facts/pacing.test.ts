import { describe, expect, it } from 'vitest';
import type { CurrentFacts } from '../../shared/api.ts';
import { type ChainsMoved, CurrentFactsCache, READ_FAILED } from '../../server/facts/current-facts.ts';
import { CAPTURE_SPACING_MS, factsLimits } from '../../server/facts/limits.ts';
import type { PaymentFacts } from '../../server/targets/stripe-refunds.ts';
import { FakeScheduler, settle } from '../support/fake-scheduler.ts';

// The current facts cache on an injected clock and timers: how often it reads Stripe, in which
// order, and what it shows when a read fails. Nothing here waits for real time.

const MINUTE_MS = 60_000;

function facts(paymentIntent: string, refundedCents = 0): PaymentFacts {
  return { payment_intent: paymentIntent, currency: 'usd', amount_received: 10_000, refunded_by_others: refundedCents, refunded_outside: refundedCents, disputed: false };
}

/** A cache over `open` items (effect id → payment intent) whose captures are recorded with the time they started. */
async function buildCache(
  open: Record<string, string>,
  options: { background: boolean; fail?: (effectId: string) => boolean; held?: Promise<void> },
) {
  const scheduler = new FakeScheduler();
  const reads: Array<{ effectId: string; atMs: number }> = [];
  const published: Array<{ effectId: string; current: CurrentFacts }> = [];
  const refunded = new Map<string, number>();
  let listener: ChainsMoved | null = null;
  const items = new Map(Object.entries(open));
  const cache = new CurrentFactsCache({
    capture: async (effectId, paymentIntent) => {
      reads.push({ effectId, atMs: scheduler.nowMs() });
      await options.held;
      if (options.fail?.(effectId)) throw new Error('Stripe is down');
      return { facts: facts(paymentIntent, refunded.get(paymentIntent) ?? 0), customer: null };
    },
    openItems: async () => new Map(items),
    watch: (next) => {
      listener = next;
      return () => {
        listener = null;
      };
    },
    publish: (effectId, current) => published.push({ effectId, current }),
    scheduler,
  });
  await cache.start({ background: options.background });
  /** Items that arrive or leave, as the views tell it after a catch-up. */
  const move = (changes: Record<string, string | null>) => {
    for (const [effectId, paymentIntent] of Object.entries(changes)) {
      if (paymentIntent === null) items.delete(effectId);
      else items.set(effectId, paymentIntent);
    }
    listener?.(new Set(Object.keys(changes)), (effectId) => items.get(effectId) ?? null);
  };
  return { cache, scheduler, reads, published, refunded, move };
}

/** The most reads started in any window of `windowMs`. */
function busiestWindow(times: number[], windowMs: number): number {
  return Math.max(0, ...times.map((start) => times.filter((t) => t >= start && t < start + windowMs).length));
}

describe('current facts: pacing on an injected clock', () => {
  it('one capture (3 Stripe reads) starts at most every 1.5 s, however many items arrive at once: at most 2 reads per second', async () => {
    const open = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`e${i}`, `pi_${i}`]));
    const { scheduler, reads } = await buildCache(open, { background: false });
    expect(CAPTURE_SPACING_MS).toBe(1_500);
    await scheduler.advance(MINUTE_MS);
    // 60 s at 2 reads per second is 120 reads: 40 captures, the first at 0 s.
    expect(reads).toHaveLength(41);
    const starts = reads.map((read) => read.atMs);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(1_500);
    // Any 10 s sees at most 7 captures: 21 reads, about 2 per second.
    expect(busiestWindow(starts, 10_000)).toBeLessThanOrEqual(7);
    expect(new Set(reads.map((read) => read.effectId)).size).toBe(41);
  });

  it('the background reads each open item again only once its last read is 10 minutes old', async () => {
    const { scheduler, reads } = await buildCache({ a: 'pi_a', b: 'pi_b', c: 'pi_c' }, { background: true });
    await scheduler.advance(61 * MINUTE_MS);
    for (const effectId of ['a', 'b', 'c']) {
      const times = reads.filter((read) => read.effectId === effectId).map((read) => read.atMs);
      // Read on arrival, then once every 10 minutes: 7 reads in 61 minutes, never two closer.
      expect(times).toHaveLength(7);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(factsLimits.itemRefreshMsMin);
    }
    // Between rounds nothing waits but one timer for the next item to come due.
    expect(scheduler.pending).toBe(1);
  });

  it('without the background nothing is read again by itself; a sweep by hand reads what is 10 minutes old', async () => {
    const { cache, scheduler, reads } = await buildCache({ a: 'pi_a' }, { background: false });
    await scheduler.advance(30 * MINUTE_MS);
    expect(reads).toHaveLength(1);
    expect(scheduler.pending).toBe(0);
    cache.sweep();
    await settle();
    expect(reads).toHaveLength(2);
    cache.sweep();
    await scheduler.advance(MINUTE_MS);
    expect(reads).toHaveLength(2);
  });

  it('a payment event goes first, then arrivals, then items the background found due, and a burst of events is one read', async () => {
    const { cache, scheduler, reads, move } = await buildCache({ a: 'pi_a', b: 'pi_b', c: 'pi_c' }, { background: false });
    await scheduler.advance(11 * MINUTE_MS);
    reads.length = 0;
    // All three are due again; the first of the round is under way at once.
    cache.sweep();
    move({ d: 'pi_d' });
    for (let i = 0; i < 5; i++) cache.onPaymentEvent('pi_c');
    cache.onPaymentEvent('pi_unknown');
    await scheduler.advance(MINUTE_MS);
    expect(reads.map((read) => read.effectId).slice(0, 4)).toEqual(['a', 'c', 'd', 'b']);
    expect(reads.filter((read) => read.effectId === 'c')).toHaveLength(1);
  });

  it('a payment event is read at once although the pace just let a read go, so the stale chip shows within a second; the next event waits for the pace', async () => {
    // 100 items arrived at once: their first reads keep the pace busy for 150 s.
    const open = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`e${i}`, `pi_${i}`]));
    const { cache, scheduler, reads } = await buildCache(open, { background: false });
    await scheduler.advance(100);
    expect(reads.map((read) => read.effectId)).toEqual(['e0']);
    // A refund by hand on e50's payment: its webhook is read now, ahead of the 98 arrivals, with no wait for the pace.
    cache.onPaymentEvent('pi_50');
    await settle();
    expect(reads.at(-1)).toEqual({ effectId: 'e50', atMs: scheduler.nowMs() });
    // A second event at once finds the capture kept for events spent: it waits for the pace, still ahead of the arrivals.
    cache.onPaymentEvent('pi_60');
    await scheduler.advance(1_399);
    expect(reads).toHaveLength(2);
    await scheduler.advance(1);
    expect(reads.at(-1)).toEqual({ effectId: 'e60', atMs: reads[0]!.atMs + CAPTURE_SPACING_MS });
    // The arrivals give the events their captures back: the next one starts a full pace later.
    await scheduler.advance(3_000);
    expect(reads.slice(3).map((read) => [read.effectId, read.atMs - reads[0]!.atMs])).toEqual([['e1', 3 * CAPTURE_SPACING_MS]]);
  });

  it('payment events never lift the reads above 2 per second for long: one capture ahead of the pace at most, whatever the events', async () => {
    const open = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`e${i}`, `pi_${i}`]));
    const { cache, scheduler, reads } = await buildCache(open, { background: false });
    // An event every 100 ms for a minute, each on another payment, over arrivals that keep the pace busy.
    for (let i = 0; i < 600; i++) {
      cache.onPaymentEvent(`pi_${99 - (i % 100)}`);
      await scheduler.advance(100);
    }
    const starts = reads.map((read) => read.atMs);
    // 60 s at 2 reads per second is 40 captures after the first; the events may take one more.
    expect(starts.length).toBeLessThanOrEqual(42);
    expect(busiestWindow(starts, 10_000)).toBeLessThanOrEqual(8);
    expect(busiestWindow(starts, 3_000)).toBeLessThanOrEqual(3);
  });

  it('a payment event reads again every open item on that payment, and only those', async () => {
    const { cache, scheduler, reads, published, refunded } = await buildCache({ a: 'pi_shared', b: 'pi_shared', c: 'pi_other' }, { background: false });
    await scheduler.advance(MINUTE_MS);
    reads.length = 0;
    refunded.set('pi_shared', 3_000);
    cache.onPaymentEvent('pi_shared');
    await scheduler.advance(MINUTE_MS);
    expect(reads.map((read) => read.effectId).sort()).toEqual(['a', 'b']);
    expect(cache.get('a')).toMatchObject({ refunded_by_others: 3_000, refunded_outside: 3_000, remaining: 7_000, error: null });
    expect(published.at(-1)).toMatchObject({ current: { remaining: 7_000 } });
  });

  it('a failed read keeps the last good figures and their time, marked with error; before any good read nothing is shown', async () => {
    let down = false;
    const { cache, scheduler, published } = await buildCache({ a: 'pi_a', never: 'pi_never' }, { background: false, fail: (effectId) => effectId === 'never' || down });
    await scheduler.advance(MINUTE_MS);
    const good = cache.get('a');
    expect(good).toMatchObject({ amount_received: 10_000, remaining: 10_000, error: null, as_of_ms: scheduler.nowMs() - MINUTE_MS });
    expect(cache.get('never')).toBeNull();
    expect(published.map((p) => p.effectId)).toEqual(['a']);
    down = true;
    await scheduler.advance(MINUTE_MS);
    expect(await cache.refresh('a')).toEqual({ ...good, error: READ_FAILED });
    expect(published.at(-1)).toEqual({ effectId: 'a', current: { ...good, error: READ_FAILED } });
    down = false;
    expect(await cache.refresh('a')).toMatchObject({ error: null, as_of_ms: scheduler.nowMs() });
  });

  it('an item that leaves the inbox is forgotten: never read again, and a read under way for it is not shown', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { cache, scheduler, reads, published, move } = await buildCache({ a: 'pi_a', b: 'pi_b', c: 'pi_c' }, { background: true, held });
    // a is being read now (Stripe has not answered); b and c wait their turn.
    expect(reads.map((read) => read.effectId)).toEqual(['a']);
    move({ a: null, b: null });
    release();
    await scheduler.advance(30 * MINUTE_MS);
    expect(reads.filter((read) => read.effectId !== 'c').map((read) => read.effectId)).toEqual(['a']);
    expect([cache.get('a'), cache.get('b')]).toEqual([null, null]);
    expect(published.map((p) => p.effectId)).toEqual(['c', 'c', 'c']);
  });

  it('stop cancels the wait and reads nothing more', async () => {
    const { cache, scheduler, reads } = await buildCache({ a: 'pi_a', b: 'pi_b' }, { background: true });
    await settle();
    await cache.stop();
    expect(scheduler.pending).toBe(0);
    await scheduler.advance(60 * MINUTE_MS);
    expect(reads.map((read) => read.effectId)).toEqual(['a']);
    await cache.idle();
  });
});
