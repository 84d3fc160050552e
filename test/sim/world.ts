import type { JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { LANDED_STATUSES, type Status } from '../../shared/statuses.ts';
import { type Roster, rosterOf } from '../../server/config/config-at-start.ts';
import { DEFAULT_CONFIG_PATH, loadConfig } from '../../server/config/load.ts';
import type { KillPoint } from '../../server/gate/kill-points.ts';
import { Authority } from '../../server/gate/leases.ts';
import { SimulatedCrash, type Tier } from '../../server/gate/target.ts';
import type { InboxRequest } from '../../server/inbox/inbox.ts';
import { boundRequest, repairChildOf } from '../../server/inbox/state.ts';
import { closingDecision, recordedEffect } from '../../server/journal/chain.ts';
import { sha256Hex } from '../../server/journal/hash.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { MemoryRefunds } from '../../server/targets/memory-payments.ts';
import { PyRandom } from '../support/py-random.ts';
import { judgeDecision } from './access-invariants.ts';
import { judgeDispatch } from './oracle.ts';
import type { Process } from './process.ts';
import { simNotifications, Receivers } from './outbox-channels.ts';
import { InjectedFault } from './process-target.ts';
import { SimJournal } from './sim-journal.ts';

/** Bugs a test can plant in the simulator's own wrappers, to prove the checks catch them. */
export const PLANTS = [
  // The target's facts check always passes: a dispatch that skips the facts check.
  'skip_facts_check',
  // The target's lookup never finds a refund: recovery resends after a crash instead of finding it.
  'skip_lookup',
  // The live inbox projection drops every CONFIRMED entry.
  'drop_confirmed',
  // The policy reads every payment as a dollar one: yen, won and dinars are compared with the dollar limit.
  'policy_reads_dollars',
  // The outbox journals every message twice, the second time under another id: a receiver that
  // drops repeats by id is told twice.
  'outbox_no_dedupe',
  // The outbox's record of a delivery is dropped: the message stays owed and is sent again.
  'outbox_skip_record',
  // The outbox's view of the journal takes every decision for a closing one: an approval reads
  // as the end of the request, and the agent is called back before anything was refunded.
  'outbox_early_final',
  // The target takes Stripe's 429 on a send for an answer of unknown outcome: the send stays
  // open under its claim, and recovery of a target with no key and no lookup calls it ambiguous.
  'busy_as_unknown',
  // The target takes Stripe's 429 on a send for a definite failure: a person is asked to look.
  'busy_as_rejected',
  // The inbox's processes read every person as a member of every group: anyone decides anything.
  'anyone_decides',
  // The derived tables a server loads after a restart answer every body of open work, and every
  // row asked for by key, short of a field.
  'drop_field_on_load',
] as const;
/** One planted bug. */
export type Plant = (typeof PLANTS)[number];

/** What a run may change; nothing here is read by server code. */
export interface SimOptions {
  plant?: Plant;
}

export const AGENT = 'support-bot';
/**
 * The shipped configuration (the rules, routes, groups and approval window) with the simulator's
 * own notifications: the shipped file reaches nobody.
 */
export const CONFIG = fourEyes({ ...loadConfig(DEFAULT_CONFIG_PATH), notifications: simNotifications(AGENT) });

/**
 * The shipped config with four-eyes on the default route: two distinct approvers from $80.00,
 * €80.00 or ¥12,000 (and in any other currency), with a second member in finance-manager so both
 * levels of its chain can give two.
 */
function fourEyes<C extends ReturnType<typeof loadConfig>>(config: C): C {
  return {
    ...config,
    groups: { ...config.groups, 'finance-manager': [...(config.groups['finance-manager'] ?? []), 'cy'] },
    routes: config.routes.map((r) => (r.name === 'default' ? { ...r, twoApproversFrom: { usd: 8_000, eur: 8_000, jpy: 12_000 } } : r)),
  };
}
const START_MS = 1_700_000_000_000;

/** Chance of a crash at each kill point of the gate, before the seed's scale. */
const KILL_CHANCE: Readonly<Record<KillPoint, number>> = {
  before_dispatch: 0.04,
  after_dispatch: 0.08,
  after_send: 0.08,
  after_commit: 0.04,
  recovery_resend: 0.3,
  outbox_before_attempt: 0.05,
  outbox_after_send: 0.05,
  outbox_after_record: 0.05,
};
/** Chance of a crash before, and again after, each journal append. */
const APPEND_CRASH_CHANCE = 0.012;

/** Faults a live process lives through. */
export const FAULTS = [
  'send_timeout_before',
  'send_timeout_after',
  'read_error',
  'lookup_error',
  // Stripe's 429s (rate-limits.ts): on a send, nothing done; on a read, the paced transport waits and reads again.
  'send_rate_limit',
  'send_lock_timeout',
  'read_rate_limit',
  // The Stripe budget has no room for a new request: it waits its turn.
  'budget_full',
] as const;
export type Fault = (typeof FAULTS)[number];
const FAULT_CHANCE: Readonly<Record<Fault, number>> = {
  send_timeout_before: 0.03,
  send_timeout_after: 0.03,
  read_error: 0.012,
  lookup_error: 0.05,
  send_rate_limit: 0.04,
  // Alone on its payment; beside another send on the same payment, rate-limits.ts asks far more often.
  send_lock_timeout: 0.01,
  read_rate_limit: 0.03,
  budget_full: 0.05,
};

/** A Stripe event waiting to be delivered (again). */
export interface QueuedEvent {
  body: JsonObject;
  queuedAtStep: number;
  deliveries: number;
}

/** One seed's world: the shared journal and payments service, the clock, the people, and the process running now. */
export class World {
  readonly rng: PyRandom;
  readonly clock = { wallMs: START_MS };
  readonly tier: Tier;
  readonly target: MemoryRefunds;
  readonly journal: SimJournal;
  /** The views' derived tables, kept through every crash as a table file is; each process reaches them through its own handle. */
  readonly derived = new MemoryDerivedTables();
  readonly groups: Record<string, string[]>;
  /** Members removed from a group, who may be put back. */
  readonly removed: Array<{ group: string; person: string }> = [];
  /** The ground truth of authority: the same groups and clock, asked by the oracle. */
  readonly truth: Authority;
  readonly coverage = new Map<string, number>();
  readonly violations: string[] = [];
  /** Multiplies every crash chance: 0 for a calm seed, and while the run settles at the end. */
  crashScale: number;
  faultsOn = true;
  process!: Process;
  processCount = 0;
  /** What the agent asked so far, to repeat or re-decide. */
  readonly requests: InboxRequest[] = [];
  requestCount = 0;
  readonly paymentIds: string[] = [];
  readonly webhooks: QueuedEvent[] = [];
  /** Everyone the outbox reaches, and every delivery they took. */
  readonly receivers = new Receivers();
  /** The status each refund's last event carried. */
  readonly evented = new Map<string, string>();
  eventCount = 0;
  step = 0;
  /** Stripe answers every refund create 429 until then (a spell of rate limiting, rate-limits.ts). */
  busyUntilMs = 0;
  /** Sends out at Stripe now, by payment: a send beside another on its payment may meet a lock_timeout. */
  readonly sendsOut = new Map<string, number>();
  /** Effects a send of which Stripe answered 429. */
  readonly rateLimited = new Set<string>();
  /**
   * Effects that met something else that may rightly leave a person to judge them: a crash while
   * their dispatch was open, a send that timed out, a lookup or read that failed.
   */
  readonly troubled = new Map<string, Set<string>>();
  readonly #timers: Array<{ wakeAtMs: number; order: number; resolve: () => void }> = [];
  #timerCount = 0;

  constructor(
    readonly seed: number,
    readonly options: SimOptions,
  ) {
    this.rng = new PyRandom(seed);
    this.tier = this.pick<Tier>([1, 1, 1, 2, 2, 3]);
    this.crashScale = this.pick([0, 0.5, 1, 1, 2]);
    this.target = new MemoryRefunds(this.tier, () => this.clock.wallMs);
    this.journal = new SimJournal({ wallClockMs: () => this.clock.wallMs });
    this.journal.onInsert = (entry) => {
      judgeDispatch(this, entry);
      judgeDecision(this, entry);
    };
    this.groups = Object.fromEntries(Object.entries(CONFIG.groups).map(([g, members]) => [g, [...members]]));
    this.truth = this.authority();
  }

  /** Who works here now: the config's people, and this world's groups as the file now says them. */
  roster(): Roster {
    return rosterOf({ people: CONFIG.people, groups: this.groups });
  }

  /** The SHA-256 standing for the config file as it is now: one per roster. */
  rosterSha256(): string {
    return sha256Hex(JSON.stringify(this.roster()));
  }

  /** An Authority over this world's groups and clock, as services.ts builds one. */
  authority(): Authority {
    return new Authority({ members: (group) => this.groups[group] ?? [], maxAgeMs: CONFIG.approvalMaxAgeMs, nowMs: () => this.clock.wallMs });
  }

  /** The authority a process decides and sends under: the world's, unless the planted bug `anyone_decides` makes everyone a member. */
  processAuthority(): Authority {
    if (this.options.plant !== 'anyone_decides') return this.authority();
    const everyone = CONFIG.people.map((p) => p.name);
    return new Authority({ members: () => everyone, maxAgeMs: CONFIG.approvalMaxAgeMs, nowMs: () => this.clock.wallMs });
  }

  /**
   * Wait `ms` of simulated time. Time never moves while any task can run: `run` moves the clock
   * to the earliest wake-up only once every task is waiting on one, so code that does not wait
   * (a check and the append after it) happens at one instant, as in FoundationDB's simulation.
   */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#timers.push({ wakeAtMs: this.clock.wallMs + Math.ceil(ms), order: this.#timerCount++, resolve });
    });
  }

  /** Call `run` after `ms` of simulated time, as a timer does; the function returned cancels it. */
  after(ms: number, run: () => void): () => void {
    const timer = { wakeAtMs: this.clock.wallMs + Math.ceil(ms), order: this.#timerCount++, resolve: run };
    this.#timers.push(timer);
    return () => {
      const at = this.#timers.indexOf(timer);
      if (at >= 0) this.#timers.splice(at, 1);
    };
  }

  /** How long a call to Stripe takes: mostly a fraction of a second, sometimes seconds. */
  latencyMs(): number {
    const roll = this.rng.random();
    if (roll < 0.8) return this.rng.randint(30, 400);
    if (roll < 0.98) return this.rng.randint(400, 2_500);
    return this.rng.randint(2_500, 8_000);
  }

  /**
   * Run `work` to its end on simulated time, with every task it started. Between wake-ups all
   * runnable code runs (a macrotask turn drains every promise job; there is no I/O to wait for),
   * then the clock jumps to the earliest sleeper, ties in the order they slept.
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    let settled = false;
    const promise = work();
    promise.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    for (;;) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.#timers.length === 0) {
        if (settled) return promise;
        throw new Error('the simulation is stuck: work waits on nothing that can wake it');
      }
      let next = 0;
      for (let i = 1; i < this.#timers.length; i++) {
        const a = this.#timers[i]!;
        const b = this.#timers[next]!;
        if (a.wakeAtMs < b.wakeAtMs || (a.wakeAtMs === b.wakeAtMs && a.order < b.order)) next = i;
      }
      const [timer] = this.#timers.splice(next, 1);
      this.clock.wallMs = Math.max(this.clock.wallMs, timer!.wakeAtMs);
      timer!.resolve();
    }
  }

  hit(key: string, count = 1): void {
    this.coverage.set(key, (this.coverage.get(key) ?? 0) + count);
  }

  violation(text: string): void {
    this.violations.push(`step ${this.step}: ${text}`);
  }

  chance(p: number): boolean {
    return this.rng.random() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing');
    return items[this.rng.randbelow(items.length)]!;
  }

  /** True when this fault strikes now (at its own chance unless one is given). */
  fault(name: Fault, chance = FAULT_CHANCE[name]): boolean {
    if (!this.faultsOn || !this.chance(chance)) return false;
    this.hit(`fault.${name}`);
    return true;
  }

  /** Note that an effect met something other than a 429 that may rightly leave a person to judge it. */
  trouble(effectId: string, what: string): void {
    const seen = this.troubled.get(effectId);
    if (seen) seen.add(what);
    else this.troubled.set(effectId, new Set([what]));
  }

  /** A process died: every dispatch open now may be left for recovery, which may not be able to tell whether it was sent. */
  noteDeath(): void {
    for (const effectId of this.journal.openDispatchIds()) this.trouble(effectId, 'crash');
  }

  crashChance(point: string): number {
    if (this.crashScale === 0) return 0;
    const kill = point.startsWith('kill:') ? KILL_CHANCE[point.slice(5) as KillPoint] : APPEND_CRASH_CHANCE;
    return kill * this.crashScale;
  }

  /**
   * How long a crashed process stays down: mostly past the claim TTL; sometimes less, so start-up
   * recovery must leave the dead sender's claims alone for a later pass; sometimes past a day, so
   * idempotency keys and approvals lapse.
   */
  downtimeMs(): number {
    const roll = this.rng.random();
    if (roll < 0.06) {
      this.hit('restart.long_outage');
      return 25 * 3_600_000;
    }
    if (roll < 0.2) {
      this.hit('restart.within_claim_ttl');
      return this.rng.randint(1_000, limits.claimTtlMs - 1);
    }
    return limits.claimTtlMs + this.rng.randint(1, 600_000);
  }

  /** Queue the events Stripe sends for refunds created or moved since the last look. */
  observeLedger(): void {
    for (const refund of this.target.refunds) {
      const last = this.evented.get(refund.id);
      if (last === refund.status) continue;
      const type = last === undefined ? 'refund.created' : refund.status === 'failed' ? 'refund.failed' : 'refund.updated';
      this.evented.set(refund.id, refund.status);
      this.eventCount += 1;
      this.webhooks.push({
        body: {
          id: `evt_${this.eventCount}`,
          object: 'event',
          type,
          created: Math.floor(this.clock.wallMs / 1000),
          livemode: false,
          data: {
            object: {
              id: refund.id,
              object: 'refund',
              amount: refund.amountCents,
              currency: this.target.payments.get(refund.paymentIntent)?.currency ?? 'usd',
              payment_intent: refund.paymentIntent,
              status: refund.status,
              metadata: refund.effectId === null ? {} : { interlock_effect_id: refund.effectId },
            },
          },
        },
        queuedAtStep: this.step,
        deliveries: 0,
      });
    }
  }

  /** A throw the run may meet: a crash, or a fault it injected. Anything else is a finding. */
  expected(what: string, error: unknown): void {
    if (error instanceof SimulatedCrash || error instanceof InjectedFault) return;
    const name = (error as Error)?.name ?? 'Error';
    this.violation(`${what} threw ${name}: ${(error as Error)?.message ?? String(error)}`);
  }

  /** Run one call of the code under test; a throw is judged by `expected` and answers undefined. */
  async guarded<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      this.expected(what, error);
      return undefined;
    }
  }

  /** An answer that says the refund landed must be backed by a refund of exactly that payload in the ledger. */
  checkLanded(where: string, effectId: string, status: Status | undefined, amountCents: number): void {
    if (status === undefined || !(LANDED_STATUSES as readonly string[]).includes(status)) return;
    this.hit('check.landed_answer');
    if (!this.target.refunds.some((r) => r.effectId === effectId && r.amountCents === amountCents)) {
      this.violation(`every answer is truthful: ${where} answered ${status} for ${effectId} (${amountCents} cents) with no such refund in the ledger`);
    }
  }

  /** `checkLanded` for a sweep's answers, which name the swept chain (a closed one answers for its repair). */
  checkSwept(where: string, answers: ReadonlyMap<string, Status> | undefined): void {
    for (const [effectId, status] of answers ?? []) {
      if (where.startsWith('recovery')) this.hit(`recovered.${status}`);
      const chain = this.journal.chainNow(effectId);
      const child = repairChildOf(boundRequest(chain), closingDecision(chain));
      const about = child ? this.process.inbox.effectIdOf(child as InboxRequest) : effectId;
      const effect = recordedEffect(about === effectId ? chain : this.journal.chainNow(about));
      const amount = typeof effect === 'object' && effect !== null && !Array.isArray(effect) ? Number(effect.amount) : Number.NaN;
      this.checkLanded(where, about, status, amount);
    }
  }
}
