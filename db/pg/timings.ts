import { performance } from 'node:perf_hooks';
import { Counter, Registry, Summary } from 'prom-client';

// How long this process's PostgreSQL writes hold the journal's head-row lock, and how long its
// checkouts wait for a free connection: the two places servers on one database queue. Kept per
// process (every pool of the process counts here) and shown by /metrics. Each costs two clock reads
// and one observation per write transaction or per checkout that had to wait; nothing else.

/** The registry the figures below are kept in, merged into every scrape of this process's apps. */
export const pgTimingsRegistry = new Registry();

/** Quantiles the figures are shown at. */
const PERCENTILES = [0.5, 0.9, 0.99];

/** From the head row locked (the write's first statement answered) to its COMMIT answered. */
const lockHold = new Summary({
  name: 'interlock_pg_append_lock_hold_seconds',
  help: "How long this process's journal writes on PostgreSQL held the head row's lock: from the lock taken to the COMMIT answered, one per write transaction (a group commit's writes share one).",
  percentiles: PERCENTILES,
  registers: [pgTimingsRegistry],
});

/** A checkout that found every connection of its pool busy: how long it waited for one. */
const poolWait = new Summary({
  name: 'interlock_pg_pool_wait_seconds',
  help: 'How long a checkout from a PostgreSQL pool of this process waited because every connection was busy (checkouts that found one free are not counted).',
  percentiles: PERCENTILES,
  registers: [pgTimingsRegistry],
});

/** Count one write transaction's hold of the head row's lock, taken at `lockedAtMs` (performance.now()). */
export function lockHeldSince(lockedAtMs: number): void {
  lockHold.observe((performance.now() - lockedAtMs) / 1000);
}

/** Whether a checkout from a pool of `max` connections, `total` of them open and `idle` free, has to wait. */
export function mustWait(pool: { totalCount: number; idleCount: number; options: { max: number } }): boolean {
  return pool.idleCount === 0 && pool.totalCount >= pool.options.max;
}

/** Count one checkout that waited for a connection since `askedAtMs` (performance.now()). */
export function poolWaitedSince(askedAtMs: number): void {
  poolWait.observe((performance.now() - askedAtMs) / 1000);
}

/** Every client a pool of this process handed out, for a transaction or a single statement. */
const checkouts = new Counter({
  name: 'interlock_pg_checkouts_total',
  help: 'Connections handed out by the PostgreSQL pools of this process, one per transaction or per statement sent alone.',
  registers: [pgTimingsRegistry],
});

/** Count one client handed out by a pool (its `acquire` event). */
export function checkedOut(): void {
  checkouts.inc();
}
