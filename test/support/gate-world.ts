import { MemoryJournal } from '../../db/journal-store.ts';
import { Gate, type Proposal } from '../../server/gate/gate.ts';
import type { KillHook } from '../../server/gate/kill-points.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { type LeaseStore, MemoryLeases } from '../../server/gate/leases.ts';
import type { Tier } from '../../server/gate/target.ts';
import { MemoryPayments } from '../../server/targets/memory-payments.ts';

/** A small world for gate tests: one order of $100, a granted lease, an in-memory journal. */
export interface GateWorld {
  target: MemoryPayments;
  leases: MemoryLeases;
  journal: JournalStore;
  clock: { wallMs: number };
  gate: Gate;
  /** Another gate on the same journal, as a second process would be; or on `journal`, another server's handle on it. */
  newGate(options?: { claimTtlMs?: number; killHook?: KillHook; leases?: LeaseStore; journal?: JournalStore }): Gate;
}

export const ORDER = '881';
export const LEASE = 'L-refund';

export function buildGateWorld(options: { tier?: Tier; journal?: JournalStore; claimTtlMs?: number } = {}): GateWorld {
  const target = new MemoryPayments(options.tier ?? 1);
  target.addOrder(ORDER, 10_000);
  const leases = new MemoryLeases();
  leases.grant(LEASE);
  const clock = { wallMs: 1_700_000_000_000 };
  const journal = options.journal ?? new MemoryJournal({ wallClockMs: () => clock.wallMs });
  const newGate: GateWorld['newGate'] = (more = {}) =>
    new Gate({
      journal: more.journal ?? journal,
      target,
      leases: more.leases ?? leases,
      wallClockMs: () => clock.wallMs,
      claimTtlMs: more.claimTtlMs ?? options.claimTtlMs ?? 120_000,
      ...(more.killHook ? { killHook: more.killHook } : {}),
    });
  return { target, leases, journal, clock, gate: newGate(), newGate };
}

/** A refund proposal for the world's order, on the facts as they are now. */
export function buildProposal(world: GateWorld, overrides: Partial<Proposal> & { amountCents?: number } = {}): Proposal {
  const { amountCents = 2_000, ...rest } = overrides;
  return {
    agent: 'refund-bot',
    lease: LEASE,
    requestKey: 'case-4471',
    premises: world.target.capture(ORDER),
    effect: { order: ORDER, amount: amountCents },
    ...rest,
  };
}
