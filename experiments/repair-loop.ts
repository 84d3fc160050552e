import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import { PyRandom } from '../test/support/py-random.ts';
import { CASE_DOLLARS, Shop } from './repair-loop-shop.ts';
import { DirectRefund, HandCheckedRefund, ProtectedRefund, type RefundTool } from './repair-loop-tools.ts';

/**
 * repair_loop (inbox §21): whether an agent told what changed and what the approval leaves can
 * repair a refused refund without paying out wrong. The agent is a scripted loop, not a model;
 * the mix is an assumption. Money is whole dollars, as in the script.
 */

export const REPAIR_SEED = 4471;
/** Calls the agent makes on one order at most; also the Envelope's attempts cap. */
export const ATTEMPTS = 3;
/** What an agent that ignores the case decides to refund. */
const OVERSHOOT_DOLLARS = 30;
const WALL_CLOCK_MS = 1_700_000_000_000;

export const REPAIR_KINDS = ['routine', 'partial_hand', 'full_hand', 'overshoot', 'stubborn', 'crash', 'duplicate'] as const;
export type RepairKind = (typeof REPAIR_KINDS)[number];
const MIX: Record<RepairKind, number> = { routine: 60, partial_hand: 12, full_hand: 5, overshoot: 10, stubborn: 3, crash: 5, duplicate: 5 };

export const REPAIR_SYSTEMS = ['no gate', 'hand check', 'interlock', 'interlock+repair'] as const;
export type RepairSystem = (typeof REPAIR_SYSTEMS)[number];

export type Verdict = 'no person' | 'person';

/** One system's totals over the 100 orders. */
export interface RepairTally {
  noPerson: number;
  person: number;
  wrong: number;
  overpaidDollars: number;
}

/** Totals per system, and per kind within each system. */
export interface RepairLoopResult {
  orders: number;
  systems: Record<RepairSystem, RepairTally>;
  byKind: Record<RepairSystem, Record<RepairKind, RepairTally>>;
}

/** The 100 kinds in the order the orders are numbered: the mix, shuffled by `random.Random(4471)`. */
export function repairMix(): RepairKind[] {
  const kinds = REPAIR_KINDS.flatMap((k) => Array.from({ length: MIX[k] }, () => k));
  new PyRandom(REPAIR_SEED).shuffle(kinds);
  return kinds;
}

/** Order `i` and its hand refund: a partial one depends on the position ($5 to $15), a full one is the whole case. */
export function handDollarsFor(kind: RepairKind, i: number): number {
  if (kind === 'partial_hand') return 5 + (i % 11);
  return kind === 'full_hand' ? CASE_DOLLARS : 0;
}

/**
 * The scripted agent (inbox §21): read the order, decide, call. An unknown outcome is recovered
 * and retried; a refusal it may retry is answered by reading again and deciding what the case
 * still allows (a stubborn agent insists on its amount); anything else goes to a person.
 */
export async function runAgent(kind: RepairKind, order: string, tool: RefundTool, shop: Shop): Promise<Verdict> {
  let seen = shop.getOrder(order);
  let amount = kind === 'overshoot' || kind === 'stubborn' ? OVERSHOOT_DOLLARS : CASE_DOLLARS;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    let result = await tool.refund(order, amount, seen);
    if (kind === 'duplicate' && attempt === 1) result = await tool.refund(order, amount, seen);
    if (result.ok) return 'no person';
    if (result.status === 'IN_FLIGHT') {
      await tool.recover();
      continue;
    }
    if (!result.mayRetry) return 'person';
    seen = shop.getOrder(order);
    const left = shop.getApproval(order).max.amount;
    if (left <= 0) return 'no person';
    amount = kind === 'stubborn' ? OVERSHOOT_DOLLARS : left;
  }
  return 'person';
}

function emptyTally(): RepairTally {
  return { noPerson: 0, person: 0, wrong: 0, overpaidDollars: 0 };
}

function count(tally: RepairTally, verdict: Verdict, totalDollars: number): void {
  if (verdict === 'no person') tally.noPerson += 1;
  else tally.person += 1;
  if (totalDollars > CASE_DOLLARS) {
    tally.wrong += 1;
    tally.overpaidDollars += totalDollars - CASE_DOLLARS;
  }
}

/** Play every order of the mix through one tool, counting each order's verdict and payout. */
async function playMix(kinds: readonly RepairKind[], shop: Shop, tool: RefundTool): Promise<{ total: RepairTally; byKind: Record<RepairKind, RepairTally> }> {
  const total = emptyTally();
  const byKind = Object.fromEntries(REPAIR_KINDS.map((k) => [k, emptyTally()])) as Record<RepairKind, RepairTally>;
  for (const [i, kind] of kinds.entries()) {
    const order = `o${i}`;
    const verdict = await runAgent(kind, order, tool, shop);
    count(total, verdict, shop.total(order));
    count(byKind[kind], verdict, shop.total(order));
  }
  return { total, byKind };
}

/** One system over the whole mix, in a fresh shop; the gated ones on a fresh SQLite journal. */
export async function runSystem(system: RepairSystem, kinds: readonly RepairKind[]): Promise<{ total: RepairTally; byKind: Record<RepairKind, RepairTally> }> {
  const shop = new Shop();
  for (const [i, kind] of kinds.entries()) shop.addOrder(`o${i}`, { handDollars: handDollarsFor(kind, i), crashOnce: kind === 'crash' });
  if (system === 'no gate') return playMix(kinds, shop, new DirectRefund(shop));
  if (system === 'hand check') return playMix(kinds, shop, new HandCheckedRefund(shop));
  const dir = mkdtempSync(join(tmpdir(), 'interlock-repair-loop-'));
  const database = openDatabase(join(dir, 'journal.sqlite'));
  try {
    // A journal thrown away after the run needs no power-loss durability; everything else is the real store.
    database.sqlite.pragma('synchronous = OFF');
    const clock = { wallMs: WALL_CLOCK_MS };
    const journal = new SqliteJournal({ db: database.db, wallClockMs: () => clock.wallMs });
    const tool = new ProtectedRefund(shop, journal, { approvals: system === 'interlock+repair', attempts: ATTEMPTS, clock });
    return await playMix(kinds, shop, tool);
  } finally {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The whole experiment: the same 100 orders through the four systems. */
export async function runRepairLoop(): Promise<RepairLoopResult> {
  const kinds = repairMix();
  const systems = {} as Record<RepairSystem, RepairTally>;
  const byKind = {} as Record<RepairSystem, Record<RepairKind, RepairTally>>;
  for (const system of REPAIR_SYSTEMS) {
    const run = await runSystem(system, kinds);
    systems[system] = run.total;
    byKind[system] = run.byKind;
  }
  return { orders: kinds.length, systems, byKind };
}
