import { describe, expect, it, vi } from 'vitest';
import type { DemoOutcome } from '../../server/demo/ask.ts';
import { DEMO_AGENT, type DemoKind, type DemoPlan, demoLimits, tallyDemoRequests } from '../../server/demo/plan.ts';
import { type DemoLog, runDemoTraffic } from '../../server/demo/traffic.ts';
import { PyRandom } from '../support/py-random.ts';
import { ManualTimers } from './manual-timers.ts';

// The runner on injected timers and a stand-in for the journal and the inbox: when it asks, how
// many, what it does with a failure, and that it leaves nothing behind.

interface Run {
  timers: ManualTimers;
  asked: Array<{ requestId: string; plan: DemoPlan }>;
  lines: string[];
  warnings: string[];
  finished: () => boolean;
  stop: () => Promise<void>;
  /** Fire the pending timer and wait until its beat has set the next one (or finished). */
  beat: () => Promise<void>;
}

/**
 * A run over a stand-in journal: the ids of the demo requests it holds (`journaled` to begin
 * with); a request asked is journaled unless `ask` says otherwise.
 */
function run(options: { journaled?: number; ask?: (requestId: string, journal: string[]) => Promise<DemoOutcome>; available?: () => boolean } = {}): Run {
  const timers = new ManualTimers();
  const asked: Run['asked'] = [];
  const lines: string[] = [];
  const warnings: string[] = [];
  let finished = false;
  const journal = Array.from({ length: options.journaled ?? 0 }, (_, i) => `demo-${i + 1}`);
  const log: DemoLog = { info: (message) => lines.push(message), warn: (_fields, message) => warnings.push(message) };
  const random = new PyRandom(11);
  const traffic = runDemoTraffic({
    tally: async () => tallyDemoRequests(journal.map((id) => ({ id, agent: DEMO_AGENT }))),
    ask: async (requestId, plan) => {
      asked.push({ requestId, plan });
      if (options.ask) return options.ask(requestId, journal);
      journal.push(requestId);
      return { paymentIntent: `pi_${requestId}`, status: plan.kind === 'routine' ? 'COMMITTED' : 'QUEUED' };
    },
    available: options.available ?? (() => true),
    timers,
    random: () => random.random(),
    log,
    onFinished: () => {
      finished = true;
    },
  });
  return {
    timers,
    asked,
    lines,
    warnings,
    finished: () => finished,
    stop: () => traffic.stop(),
    async beat() {
      const before = timers.delays.length;
      timers.fire();
      await vi.waitFor(() => expect(timers.delays.length > before || finished).toBe(true), { interval: 1 });
    },
  };
}

describe('demo traffic', () => {
  it('asks once soon after start, then every 10 to 30 s, each under a new id demo-<n>', async () => {
    const r = run();
    expect(r.asked).toEqual([]);
    expect(r.timers.pending).toBe(1);
    for (let i = 0; i < 40; i++) await r.beat();
    expect(r.asked.map((a) => a.requestId)).toEqual(Array.from({ length: 40 }, (_, i) => `demo-${i + 1}`));
    const [first, ...rest] = r.timers.delays;
    expect(first).toBeGreaterThanOrEqual(1_000);
    expect(first).toBeLessThanOrEqual(3_000);
    expect(rest).toHaveLength(40);
    for (const ms of rest) {
      expect(ms).toBeGreaterThanOrEqual(10_000);
      expect(ms).toBeLessThanOrEqual(30_000);
    }
    expect(new Set(rest).size).toBeGreaterThan(20);
    await r.stop();
  });

  it('a run holds every kind: routine, over the $50 rule, stale, disputed', async () => {
    const r = run();
    for (let i = 0; i < 11; i++) await r.beat();
    const kinds = new Set<DemoKind>(r.asked.map((a) => a.plan.kind));
    expect(kinds).toEqual(new Set(['routine', 'over_limit', 'stale', 'disputed']));
    expect(r.lines.find((line) => line.includes('refunded by hand'))).toMatch(/^demo traffic: demo-\d+ asks \$\d+\.\d\d back of \$\d+\.\d\d on pi_demo-\d+ \(.*\): QUEUED; then \$\d+\.\d\d refunded by hand in the sandbox/);
    expect(r.lines.some((line) => line.includes('(payment disputed)'))).toBe(true);
    await r.stop();
  });

  it(`stops at ${demoLimits.requestsMax} demo requests, counting those the journal already holds, and leaves no timer`, async () => {
    const r = run({ journaled: 197 });
    for (let i = 0; i < 3; i++) await r.beat();
    expect(r.asked.map((a) => a.requestId)).toEqual(['demo-198', 'demo-199', 'demo-200']);
    expect(r.lines[0]).toBe('demo traffic: 197 demo requests already in this data folder; going on from demo-198');
    expect(r.finished()).toBe(true);
    expect(r.timers.pending).toBe(0);
    expect(r.lines.at(-1)).toBe('demo traffic: this data folder holds 200 demo requests, its limit; no more are asked');
  });

  it('asks nothing at all when the data folder holds its 200 already', async () => {
    const r = run({ journaled: 200 });
    await r.beat();
    expect(r.asked).toEqual([]);
    expect(r.finished()).toBe(true);
    expect(r.timers.pending).toBe(0);
  });

  it('a failed request is logged, and the next goes on at its time, under the next id the journal leaves free', async () => {
    let calls = 0;
    const r = run({
      ask: async (requestId, journal) => {
        calls += 1;
        // The second fails before anything is written; the fourth after its request was journaled.
        if (calls === 2) throw new Error('Stripe could not be reached');
        journal.push(requestId);
        if (calls === 4) throw new Error('the hand refund was refused');
        return { paymentIntent: `pi_${requestId}`, status: 'QUEUED' };
      },
    });
    for (let i = 0; i < 5; i++) await r.beat();
    expect(r.warnings).toEqual(['demo traffic: demo-2 failed; the next one goes on', 'demo traffic: demo-3 failed; the next one goes on']);
    expect(r.asked.map((a) => a.requestId)).toEqual(['demo-1', 'demo-2', 'demo-2', 'demo-3', 'demo-4']);
    expect(r.timers.pending).toBe(1);
    await r.stop();
  });

  it('asks nothing while the journal is unavailable, and keeps its beat', async () => {
    let available = false;
    const r = run({ available: () => available });
    await r.beat();
    await r.beat();
    expect(r.asked).toEqual([]);
    available = true;
    await r.beat();
    expect(r.asked.map((a) => a.requestId)).toEqual(['demo-1']);
    await r.stop();
  });

  it('stop cancels the next beat and waits for the one under way: no timer is left', async () => {
    let release: () => void = () => {};
    const r = run({
      ask: (requestId) =>
        new Promise((resolve) => {
          release = () => resolve({ paymentIntent: `pi_${requestId}`, status: 'QUEUED' });
        }),
    });
    r.timers.fire();
    await vi.waitFor(() => expect(r.asked).toHaveLength(1), { interval: 1 });
    let stopped = false;
    const stopping = r.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(r.timers.pending).toBe(0);
    const quiet = run();
    await quiet.stop();
    expect(quiet.timers.pending).toBe(0);
  });
});
