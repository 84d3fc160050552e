import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import { Gate } from '../server/gate/gate.ts';
import { MemoryLeases } from '../server/gate/leases.ts';
import { MemoryPayments } from '../server/targets/memory-payments.ts';
import { percentile } from './stats.ts';

/** A bound on any one run, far above what a few seconds can reach. */
const EFFECTS_MAX = 2_000_000;
const LEASE = 'L-bench';
const ORDER_CENTS = 10_000;
const REFUND_CENTS = 2_000;

/** What one timed run of the gate did. */
export interface GateRun {
  effects: number;
  effectsPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** Process CPU (user + system) per effect, in µs: what the machine's other load does not change much. */
  cpuUsPerEffect: number;
  /** Journal writes per batch, on average: how much group commit shared each fsync. */
  writesPerBatch: number;
  batches: number;
}

/**
 * Routine effects through the Gate, in process, against MemoryPayments with no latency, on a
 * durable SqliteJournal (synchronous=FULL) in `dir`: `submitters` loops each submit one effect
 * after another (each on an order of its own, so no premise goes stale) for `durationMs`.
 */
export async function runGate(dir: string, options: { durationMs: number; submitters: number; tag: string }): Promise<GateRun> {
  const opened = openDatabase(path.join(dir, `gate-${options.tag}.sqlite`));
  try {
    const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
    const target = new MemoryPayments(1);
    const leases = new MemoryLeases();
    leases.grant(LEASE);
    const gate = new Gate({ journal, target, leases, wallClockMs: () => Date.now() });
    const latenciesMs: number[] = [];
    let started = 0;
    const startMs = performance.now();
    const cpuBefore = process.cpuUsage();
    const deadlineMs = startMs + options.durationMs;
    const submitter = async () => {
      while (performance.now() < deadlineMs && started < EFFECTS_MAX) {
        const order = `o${options.tag}-${started++}`;
        target.addOrder(order, ORDER_CENTS);
        const sentMs = performance.now();
        const outcome = await gate.submit({
          agent: 'bench',
          lease: LEASE,
          requestKey: order,
          premises: target.capture(order),
          effect: { order, amount: REFUND_CENTS },
        });
        if (outcome.status !== 'COMMITTED') throw new Error(`a routine effect ended ${outcome.status}`);
        latenciesMs.push(performance.now() - sentMs);
      }
    };
    await Promise.all(Array.from({ length: options.submitters }, submitter));
    const elapsedMs = performance.now() - startMs;
    const cpu = process.cpuUsage(cpuBefore);
    const stats = journal.commitStats;
    return {
      effects: latenciesMs.length,
      effectsPerS: latenciesMs.length / (elapsedMs / 1000),
      p50Ms: percentile(latenciesMs, 50),
      p99Ms: percentile(latenciesMs, 99),
      cpuUsPerEffect: (cpu.user + cpu.system) / latenciesMs.length,
      writesPerBatch: stats.ops / stats.batches,
      batches: stats.batches,
    };
  } finally {
    opened.close();
  }
}

/** The same target called directly by the same submitters: no journal, no checks, nothing durable. */
export async function runNaive(options: { durationMs: number; submitters: number; tag: string }): Promise<number> {
  const target = new MemoryPayments(1);
  let started = 0;
  let done = 0;
  const startMs = performance.now();
  const deadlineMs = startMs + options.durationMs;
  const submitter = async () => {
    while (performance.now() < deadlineMs && started < EFFECTS_MAX) {
      const n = started++;
      const outcome = await target.apply(`n${options.tag}-${n}`, { order: `o${options.tag}-${n}`, amount: REFUND_CENTS });
      if (outcome.status !== 'ok') throw new Error(`a direct refund answered ${String(outcome.status)}`);
      done += 1;
    }
  };
  await Promise.all(Array.from({ length: options.submitters }, submitter));
  return done / ((performance.now() - startMs) / 1000);
}
