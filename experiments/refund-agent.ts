import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../db/open.ts';
import { SqliteJournal } from '../db/journal-store.ts';
import { Gate, type Proposal } from '../server/gate/gate.ts';
import { MemoryLeases } from '../server/gate/leases.ts';
import { SimulatedCrash, type Tier } from '../server/gate/target.ts';
import { MemoryPayments } from '../server/targets/memory-payments.ts';
import { DurableSender, IdempotencyOnlySender, NaiveSender, type RefundSystem } from './baselines.ts';

/**
 * Whether one approved $20 refund lands exactly once under crashes, duplicates, a re-deciding
 * model, a revoked approval, a changed order and an expired idempotency key (seed page,
 * `refund_agent`). Every cell is a fresh world; the gate runs on a real SQLite journal.
 */

export const FAULTS = [
  'happy_path',
  'crash_before_send',
  'crash_before_ack',
  'duplicate_submit',
  'model_redecides',
  'conflicting_payload',
  'lease_revoked',
  'stale_eligibility',
  'refund_during_outage',
  'lease_revoked_during_outage',
  'key_expired',
] as const;
export type Fault = (typeof FAULTS)[number];

export const SYSTEMS = ['naive', 'idempotency@tier1', 'durable@tier1', 'gate@tier1', 'gate@tier2', 'gate@tier3'] as const;
export type SystemName = (typeof SYSTEMS)[number];

/** Faults after which no refund should exist at all. */
const EXPECT_NOTHING: ReadonlySet<Fault> = new Set(['lease_revoked', 'stale_eligibility', 'lease_revoked_during_outage']);

const ORDER = '881';
const ORDER_CENTS = 10_000;
const ASK_CENTS = 2_000;
const REDECIDED_CENTS = 3_000;
const LEASE = 'L-refund';
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** One cell of the table. */
export interface Cell {
  outcome: string;
  refundedCents: number;
  expectedCents: number;
  held: boolean;
  availabilityLost: boolean;
}

/** What a fault is played against: the payments, the grants, the system under test and the wall clock. */
export interface FaultWorld {
  target: MemoryPayments;
  leases: MemoryLeases;
  system: RefundSystem;
  clock: { wallMs: number };
}

interface World extends FaultWorld {
  close(): void;
}

function buildWorld(name: SystemName): World {
  const tier: Tier = name === 'naive' ? 3 : (Number(name.slice(-1)) as Tier);
  const target = new MemoryPayments(tier);
  target.addOrder(ORDER, ORDER_CENTS);
  const leases = new MemoryLeases();
  leases.grant(LEASE);
  const clock = { wallMs: 1_700_000_000_000 };
  if (name === 'naive') return { target, leases, clock, system: new NaiveSender(target), close() {} };
  if (name === 'idempotency@tier1') return { target, leases, clock, system: new IdempotencyOnlySender(target), close() {} };
  if (name === 'durable@tier1') return { target, leases, clock, system: new DurableSender(target), close() {} };
  const dir = mkdtempSync(join(tmpdir(), 'interlock-refund-agent-'));
  const database = openDatabase(join(dir, 'journal.sqlite'));
  const gate = new Gate({
    journal: new SqliteJournal({ db: database.db, wallClockMs: () => clock.wallMs }),
    target,
    leases,
    wallClockMs: () => clock.wallMs,
  });
  const system: RefundSystem = {
    submit: async (proposal) => (await gate.submit(proposal)).status,
    recover: async () => gate.recover(),
  };
  return {
    target,
    leases,
    clock,
    system,
    close() {
      database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function proposalFor(world: FaultWorld, amountCents: number): Proposal {
  return {
    agent: 'refund-bot',
    lease: LEASE,
    requestKey: 'case-4471',
    premises: world.target.capture(ORDER),
    effect: { order: ORDER, amount: amountCents },
  };
}

/** Submit, treating a simulated crash as the process dying mid-call. */
async function submitThroughCrash(world: FaultWorld, proposal: Proposal): Promise<void> {
  try {
    await world.system.submit(proposal);
  } catch (error) {
    if (!(error instanceof SimulatedCrash)) throw error;
  }
}

/** Restart: recovery settles what it can; a system with nothing to recover simply tries again. */
async function recoverOrRetry(world: FaultWorld, proposal: Proposal): Promise<string> {
  const recovered = await world.system.recover();
  const first = recovered.values().next();
  if (!first.done) return first.value;
  await world.system.submit(proposal);
  return 'RETRIED';
}

/**
 * Play one fault against a world whose order 881 holds $100 and whose grant L-refund stands: the
 * $20 refund, the fault, and the restart or retry after it. What the system answered last.
 */
export async function playFault(fault: Fault, world: FaultWorld): Promise<string> {
  const proposal = proposalFor(world, ASK_CENTS);
  const { target, leases, system } = world;
  switch (fault) {
    case 'happy_path':
      return system.submit(proposal);
    case 'crash_before_send':
      target.injectFault('crash_before');
      await submitThroughCrash(world, proposal);
      return recoverOrRetry(world, proposal);
    case 'crash_before_ack':
      target.injectFault('crash_after');
      await submitThroughCrash(world, proposal);
      return recoverOrRetry(world, proposal);
    case 'duplicate_submit':
      await system.submit(proposal);
      return system.submit(proposal);
    case 'model_redecides':
      target.injectFault('crash_after');
      await submitThroughCrash(world, proposal);
      await system.recover();
      return system.submit(proposalFor(world, REDECIDED_CENTS));
    case 'conflicting_payload':
      await system.submit(proposal);
      return system.submit(proposalFor(world, REDECIDED_CENTS));
    case 'lease_revoked':
      leases.revoke(LEASE);
      return system.submit(proposal);
    case 'stale_eligibility':
      target.orders.get(ORDER)!.eligible = false;
      return system.submit(proposal);
    case 'refund_during_outage':
      target.injectFault('crash_before');
      await submitThroughCrash(world, proposal);
      target.refundByHand(ORDER, ASK_CENTS);
      return recoverOrRetry(world, proposal);
    case 'lease_revoked_during_outage':
      target.injectFault('crash_before');
      await submitThroughCrash(world, proposal);
      leases.revoke(LEASE);
      return recoverOrRetry(world, proposal);
    case 'key_expired':
      target.injectFault('crash_after');
      await submitThroughCrash(world, proposal);
      target.pruneKeys();
      world.clock.wallMs += DAY_MS + HOUR_MS;
      return recoverOrRetry(world, proposal);
  }
}

/** Run one fault against one system in a fresh world and judge it. */
export async function runCell(fault: Fault, name: SystemName): Promise<Cell> {
  const world = buildWorld(name);
  try {
    const outcome = await playFault(fault, world);
    const refundedCents = world.target.refundedTotal(ORDER);
    const expectedCents = EXPECT_NOTHING.has(fault) ? 0 : ASK_CENTS;
    const ambiguous = outcome === 'AMBIGUOUS';
    const held = refundedCents === expectedCents || (ambiguous && refundedCents <= expectedCents);
    return { outcome, refundedCents, expectedCents, held, availabilityLost: ambiguous };
  } finally {
    world.close();
  }
}

/** The whole table, fault by fault. */
export async function runRefundAgent(): Promise<Record<Fault, Record<SystemName, Cell>>> {
  const table = {} as Record<Fault, Record<SystemName, Cell>>;
  for (const fault of FAULTS) {
    const row = {} as Record<SystemName, Cell>;
    for (const name of SYSTEMS) row[name] = await runCell(fault, name);
    table[fault] = row;
  }
  return table;
}

/** A cell as the seed page prints it: `COMMITTED $20 held`. */
export function renderCell(cell: Cell): string {
  const verdict = !cell.held ? 'VIOLATED' : cell.availabilityLost ? 'held, availability lost' : 'held';
  return `${cell.outcome} $${cell.refundedCents / 100} ${verdict}`;
}
