import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import type { Entry } from '../shared/entries.ts';
import type { Status } from '../shared/statuses.ts';
import { latestEscalation } from '../server/journal/chain.ts';
import { Gate } from '../server/gate/gate.ts';
import type { JournalStore } from '../server/journal/store.ts';
import { Authority } from '../server/gate/leases.ts';
import { SimulatedCrash } from '../server/gate/target.ts';
import { childIdFor, Inbox } from '../server/inbox/inbox.ts';
import { boundRequest, chainState } from '../server/inbox/state.ts';
import { computeScoreboard, type Scoreboard } from '../server/scoreboard/figures.ts';
import { HOUR_MS, simulatorPolicy } from '../test/support/inbox-world.ts';
import { PyRandom } from '../test/support/py-random.ts';
import { DAY, DayPayments, type DayOutcome, type DayRequest, type DaySystem, dayFromSeed, runBaseline, uniqueRequests, wrongOrders } from './approval-inbox-day.ts';

/**
 * approval_inbox (inbox §20): how many refunds of a synthetic day still need a person, and how
 * many are refunded the wrong amount, with everyone approving, rules only, and rules plus
 * Interlock. The Interlock system is our real inbox over our real gate on a SQLite journal, with
 * the script's reviewer policy and its latency draws.
 */

const GROUPS: Record<string, string[]> = {
  'ap-leads': ['ana'],
  controller: ['cy'],
  'finance-manager': ['fm'],
  'payments-ops': ['ops'],
  risk: ['rita'],
};
const WALL_CLOCK_MS = 1_700_000_000_000;
const MS_PER_S = 1000;
const SCAN_PAGE = 10_000;
/** What a person's decision returns when it was recorded: anything else here is our bug. */
const DECIDED_STATUSES: ReadonlySet<Status> = new Set(['APPROVED', 'QUEUED', 'REJECTED']);

/** What the Interlock system of the day produced. */
export interface InterlockDay extends DayOutcome {
  reviewsByReason: Record<string, number>;
  /** Reviews that decided the new amount of an accepted repair (a child routed to another group). */
  repairReviews: number;
  scoreboard: Scoreboard;
}

/** Every result of the day. */
export interface ApprovalInboxResult {
  deliveries: number;
  /** Unique request ids of the day. */
  uniqueIds: number;
  systems: Record<DaySystem, DayOutcome>;
  interlock: InterlockDay;
}

/**
 * The review loop of the script, over our inbox. `queue` and `approved` mirror the script's
 * in-memory caches, which are Python dicts: an item re-read into the cache (a new escalation, an
 * SLA move, a stale approval shown again) moves to the end. The order matters, because it is the
 * order in which the latency draws are handed out.
 */
class DayRun {
  nowS = 0;
  reviews = 0;
  repairReviews = 0;
  readonly reviewsByReason: Record<string, number> = {};
  readonly queue = new Map<string, string>();
  readonly approved = new Set<string>();
  readonly ready = new Map<string, number>();
  readonly latency = new PyRandom(DAY.seed);
  /**
   * The chains still open (not DONE or CLOSED), in the order they were started: what the inbox's
   * sweeps would find by scanning the journal, less the finished chains they would skip anyway.
   */
  readonly open = new Set<string>();
  readonly inbox: Inbox;
  readonly gate: Gate;

  constructor(journal: JournalStore, target: DayPayments) {
    const authority = new Authority({ members: (g) => GROUPS[g] ?? [], maxAgeMs: 4 * HOUR_MS, nowMs: () => this.nowMs() });
    const gate = new Gate({ journal, target, leases: authority, wallClockMs: () => WALL_CLOCK_MS });
    this.gate = gate;
    this.inbox = new Inbox({
      name: 'inbox',
      gate,
      authority,
      policy: simulatorPolicy({ limit: DAY.limitDollars }),
      capture: async (request) => target.capture(request.order as string),
      effectOf: (request) => ({ order: request.order as string, amount: request.amount as number }),
      requestKeyOf: (request) => request.id,
      nowMs: () => this.nowMs(),
      listChains: async () => [...this.open],
    });
  }

  /** The inbox clock in whole ms; the script's clock is in (fractional) seconds. */
  nowMs(): number {
    return Math.round(this.nowS * MS_PER_S);
  }

  /** Re-read one chain into the mirrored caches, as the script's `_cache` does. */
  async recache(effectId: string): Promise<void> {
    const chain = await this.inbox.journal.entries(effectId);
    this.queue.delete(effectId);
    this.approved.delete(effectId);
    const state = chainState(chain);
    if (state === 'DONE' || state === 'CLOSED') this.open.delete(effectId);
    else this.open.add(effectId);
    if (state === 'ESCALATED') this.queue.set(effectId, latestEscalation(chain).escalation!.hash);
    if (state === 'APPROVED') this.approved.add(effectId);
  }

  async deliver(request: DayRequest): Promise<void> {
    this.nowS += DAY.arrivalS;
    const effectId = this.inbox.effectIdOf(request);
    this.open.add(effectId);
    try {
      await this.inbox.submit(request);
    } catch (error) {
      if (!(error instanceof SimulatedCrash)) throw error;
      const recovered = await this.gate.recover();
      await this.inbox.reconcile(recovered);
      for (const id of recovered.keys()) await this.recache(id);
    }
    await this.recache(effectId);
    await this.review();
  }

  /**
   * When the reviewer gets to an escalation: now plus an exponential latency, the first time it
   * is looked at. A latency is drawn on every look, though, and only the first is kept: that is
   * what the script's `ready.setdefault(hash, now + expovariate(...))` does, since Python
   * evaluates the default before the call. Drawing only on the first look hands out different
   * numbers and does not reproduce the published waits.
   */
  readyAt(hash: string): number {
    const drawn = this.nowS + this.latency.expovariate(1 / DAY.latencyS);
    const kept = this.ready.get(hash);
    if (kept !== undefined) return kept;
    this.ready.set(hash, drawn);
    return drawn;
  }

  async review(): Promise<void> {
    const moved = await this.inbox.tick();
    for (const effectId of moved.keys()) await this.recache(effectId);
    for (const [effectId, hash] of [...this.queue]) {
      if (this.readyAt(hash) > this.nowS) continue;
      await this.decide(effectId, hash);
    }
    await this.executeApproved();
  }

  /**
   * The reviewer: the first member of the item's group. Approve a judgment call on sound
   * facts; take a refund_remaining repair on sound facts; reject everything else, including a
   * still_fits suggestion after a hand refund (deliberately not taken) and any crash case.
   */
  async decide(effectId: string, hash: string): Promise<void> {
    const chain = await this.inbox.journal.entries(effectId);
    const escalation = latestEscalation(chain).escalation!;
    const request = boundRequest(chain) as unknown as DayRequest;
    const reason = escalation.reason;
    this.reviews += 1;
    this.reviewsByReason[reason] = (this.reviewsByReason[reason] ?? 0) + 1;
    if (request.repair_of !== undefined) this.repairReviews += 1;
    const by = [...(GROUPS[escalation.group] ?? [])].sort()[0]!;
    const unsound = request.flagged || escalation.facts.eligible !== true;
    const remaining = escalation.repairs.findIndex((r) => r.code === 'refund_remaining');
    let status: Status;
    if (reason === 'needs_judgment' && !unsound) {
      status = await this.inbox.approve(effectId, by, { seen: hash, execute: false });
    } else if (remaining >= 0 && !unsound) {
      status = await this.inbox.repair(effectId, by, remaining, { seen: hash, execute: false });
      await this.recache(effectId);
      effectId = this.inbox.effectIdOf({ ...request, id: childIdFor(request.id, hash) });
    } else {
      status = await this.inbox.reject(effectId, by, { seen: hash });
    }
    if (!DECIDED_STATUSES.has(status)) throw new Error(`the reviewer's decision on ${request.id} came back ${status}`);
    await this.recache(effectId);
  }

  /**
   * Send recorded approvals in the order they were given, as the script's dict does. The inbox's
   * own sweep then must find nothing left: every approval is sent exactly once.
   */
  async executeApproved(): Promise<void> {
    for (const effectId of [...this.approved]) {
      this.approved.delete(effectId);
      await this.inbox.execute(effectId);
      await this.recache(effectId);
    }
    const left = await this.inbox.executeApproved();
    if (left.size > 0) throw new Error(`approvals left unsent: ${[...left.keys()].join(', ')}`);
  }

  /** After the last arrival: jump to the earliest review due, until nobody waits. */
  async drain(): Promise<void> {
    while (this.queue.size > 0) {
      const due = Math.min(...[...this.queue.values()].map((hash) => this.readyAt(hash)));
      this.nowS = Math.max(this.nowS, due);
      await this.review();
    }
  }
}

/** Every entry of the journal, in order. */
async function allEntries(journal: JournalStore): Promise<Entry[]> {
  const out: Entry[] = [];
  for (let after = 0; ; ) {
    const page = await journal.scan(after, SCAN_PAGE);
    if (page.length === 0) return out;
    for (const { seq, entry } of page) {
      out.push(entry);
      after = seq;
    }
  }
}

/** Rules + Interlock on the day, on a SQLite journal in a temporary folder. */
export async function runInterlockDay(day: readonly DayRequest[]): Promise<InterlockDay> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-approval-inbox-'));
  const database = openDatabase(join(dir, 'journal.sqlite'));
  try {
    // A journal thrown away after the run needs no power-loss durability; everything else is the real store.
    database.sqlite.pragma('synchronous = OFF');
    const journal = new SqliteJournal({ db: database.db, wallClockMs: () => WALL_CLOCK_MS });
    const target = new DayPayments(day);
    const run = new DayRun(journal, target);
    for (const request of day) await run.deliver(request);
    await run.drain();
    return {
      reviews: run.reviews,
      wrong: wrongOrders(day, target).length,
      reviewsByReason: run.reviewsByReason,
      repairReviews: run.repairReviews,
      scoreboard: computeScoreboard(await allEntries(journal), 'inbox'),
    };
  } finally {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The whole experiment: the same day through the three systems. */
export async function runApprovalInbox(): Promise<ApprovalInboxResult> {
  const day = dayFromSeed();
  const interlock = await runInterlockDay(day);
  return {
    deliveries: day.length,
    uniqueIds: uniqueRequests(day).length,
    systems: {
      'everyone approves': await runBaseline(day, 'everyone approves'),
      'rules only': await runBaseline(day, 'rules only'),
      'rules + Interlock': { reviews: interlock.reviews, wrong: interlock.wrong },
    },
    interlock,
  };
}
