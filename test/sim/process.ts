import type { Entry } from '../../shared/entries.ts';
import { limits } from '../../shared/limits.ts';
import { Gate } from '../../server/gate/gate.ts';
import type { KillPoint } from '../../server/gate/kill-points.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import type { InboxPolicy } from '../../server/inbox/core.ts';
import { Inbox } from '../../server/inbox/inbox.ts';
import { policyFromConfig } from '../../server/inbox/policy.ts';
import { waitsItsTurn } from '../../server/inbox/state.ts';
import { journalConfigAtStart } from '../../server/app/reload.ts';
import { queueWaiting, recoverInFlight, requestKeyOf } from '../../server/app/services.ts';
import { type BudgetCapacity, StripeBudget } from '../../server/stripe/budget.ts';
import { TurnQueue } from '../../server/stripe/turn-queue.ts';
import { type CaughtUp, Views } from '../../server/views/views.ts';
import type { Outbox } from '../../server/outbox/outbox.ts';
import { judgeResend } from './oracle.ts';
import { createOutbox, outboxPass } from './outbox-process.ts';
import { ProcessTarget } from './process-target.ts';
import { ProcessTables } from './sim-derived.ts';
import { type Life, ProcessJournal } from './sim-journal.ts';
import { CONFIG, type World } from './world.ts';

// A simulated server process, wired as server/app/services.ts wires one, and the start-up and ticker
// paths it runs (startServices, startTicker). A crash drops the whole object; the next process
// is built anew over the same journal and payments service.

/** Everything one simulated process holds; a crash drops all of it. */
export interface Process {
  id: number;
  life: Life;
  journal: ProcessJournal;
  target: ProcessTarget;
  gate: Gate;
  inbox: Inbox;
  /** The inbox and scoreboard projections, caught up on every read (server/views/views.ts). */
  views: Views;
  /** Messages to people and agents, over this process's simulated channels. */
  outbox: Outbox;
  /** The process's Stripe budget, on the simulated clock: new requests take their read and create from it. */
  budget: StripeBudget;
  /** Requests waiting their turn to reach Stripe, in arrival order. */
  turns: TurnQueue;
}

/**
 * A small budget, so that other calls can fill its window (rate-limits.ts fillBudget); a request's
 * read and create always fit in an empty one.
 */
const BUDGET_CAPACITY: BudgetCapacity = { globalPerWindow: 6, endpointPerWindow: 6 };

/** The life of one process: its crashes come from the world's dice. */
class ProcessLife implements Life {
  dead = false;
  readonly #onDeath: Array<() => void> = [];

  constructor(private readonly world: World) {}

  note(key: string): void {
    this.world.hit(key);
  }

  /** Be told the moment the process dies (before anything it started hears of it). */
  onDeath(listener: () => void): void {
    this.#onDeath.push(listener);
  }

  maybeCrash(point: string): void {
    if (this.dead) throw new SimulatedCrash('the process is dead');
    const chance = this.world.crashChance(point);
    if (chance === 0 || !this.world.chance(chance)) return;
    this.dead = true;
    this.world.noteDeath();
    for (const listener of this.#onDeath) listener();
    const [where, detail] = point.split(':');
    this.world.hit(where === 'kill' ? `kill.${detail}` : `crash.${where}`);
    if (where !== 'kill') this.world.hit(`crash.${where}.${detail}`);
    throw new SimulatedCrash(`crashed at ${point}`);
  }
}

/** The planted bug `policy_reads_dollars`: the rules are handed every payment's facts as if it were in dollars. */
function readingDollars(policy: InboxPolicy): InboxPolicy {
  return { ...policy, evaluate: (request, facts) => policy.evaluate(request, { ...facts, currency: 'usd' }) };
}

/** A new process over the shared journal and payments service, wired as services.ts wires a server. */
export function createProcess(world: World): Process {
  world.processCount += 1;
  const id = world.processCount;
  const life = new ProcessLife(world);
  const journal = new ProcessJournal(world.journal, life);
  const target = new ProcessTarget(world, life);
  const authority = world.processAuthority();
  const killHook = (point: KillPoint, effectId: string) => {
    world.hit(`reached.${point}`);
    life.maybeCrash(`kill:${point}`);
    if (point === 'recovery_resend') judgeResend(world, effectId);
  };
  // A busy Stripe is tried again on the simulated clock, with the seed's jitter, so a seed replays.
  const gate = new Gate({
    journal,
    target,
    leases: authority,
    wallClockMs: () => world.clock.wallMs,
    owner: `sim-${id}`,
    killHook,
    sleep: (ms) => world.sleep(ms),
    random: () => world.rng.random(),
  });
  // The planted bug `drop_confirmed`: the views are fed a journal whose reads leave CONFIRMED out.
  const dropConfirmed = (entry: Entry) => (entry.kind === 'CONFIRMED' ? null : entry);
  const views = new Views({
    journal: world.options.plant === 'drop_confirmed' ? new ProcessJournal(world.journal, life, dropConfirmed) : journal,
    inboxName: CONFIG.inboxName,
    nowMs: () => world.clock.wallMs,
    log: {
      fatal: (_fields, message) => world.violation(`the views failed: ${message}`),
      error: (_fields, message) => world.violation(`the views failed: ${message}`),
    },
    derived: new ProcessTables(world.derived, life),
  });
  const inbox: Inbox = new Inbox({
    name: CONFIG.inboxName,
    gate,
    authority,
    policy: world.options.plant === 'policy_reads_dollars' ? readingDollars(policyFromConfig(CONFIG)) : policyFromConfig(CONFIG),
    capture: async (request) => {
      const paymentIntent = String(request.payment_intent);
      return target.capture(paymentIntent, (await journal.reservations(paymentIntent)).open);
    },
    effectOf: (request) => ({ payment_intent: String(request.payment_intent), amount: request.amount as number }),
    requestKeyOf,
    nowMs: () => world.clock.wallMs,
    listChains: async () => (await views.current()).inbox.ownedIds(),
    work: views.work((request) => inbox.effectIdOf(request)),
    onError: (effectId, error) => {
      if (!views.report(error)) world.expected(`a sweep of ${effectId}`, error);
    },
  });
  const outbox = createOutbox(world, { id, life, journal, views, killHook });
  const budget = new StripeBudget({ capacity: BUDGET_CAPACITY, clock: { nowMs: () => world.clock.wallMs, after: (ms, run) => world.after(ms, run) } });
  const turns = new TurnQueue({
    budget,
    journal,
    inbox,
    nowMs: () => world.clock.wallMs,
    sleep: (ms) => world.sleep(ms),
    onSettled: (effectId) => world.hit(waitsItsTurn(world.journal.chainNow(effectId)) ? 'turn.still_waiting' : 'turn.decided'),
    onError: (effectId, error) => {
      if (!views.report(error)) world.expected(`a request waiting its turn (${effectId})`, error);
    },
  });
  // A dead process's queue takes nothing more: what it held waits in the journal for start-up.
  life.onDeath(() => turns.stop());
  return { id, life, journal, target, gate, inbox, views, outbox, budget, turns };
}

/**
 * Start-up, as startServices runs it: replay, queue again the requests waiting their turn, recover
 * what was in flight, reconcile, refresh, send approvals left unsent.
 */
export async function startUp(world: World, p: Process): Promise<void> {
  await p.views.current();
  // The config first, as buildInterlock's start does: a group changed while down is journaled, and the approvals it took away lapse.
  const config = await journalConfigAtStart({ journal: p.journal, inbox: p.inbox, nowMs: () => world.clock.wallMs, sha256: world.rosterSha256(), config: { people: CONFIG.people, groups: world.groups } });
  if (config.outcome === 'journaled' && config.comparedWith !== null) {
    world.hit('start.config_journaled');
    if (Object.keys(config.lapsed).length > 0) world.hit('start.config_lapsed');
  }
  await queueWaiting(p);
  world.hit('turn.queued_at_start_up', p.turns.length);
  const recovered = await recoverInFlight(p);
  world.checkSwept('recovery at start-up', recovered);
  await p.inbox.reconcile(recovered);
  world.checkSwept('refresh at start-up', await p.inbox.refresh());
  world.checkSwept('executeApproved at start-up', await p.inbox.executeApproved());
  await p.views.current();
}

/**
 * While the server is down, someone is taken out of a group in the file: often one whose approval
 * is recorded and not yet sent. The next start journals it (server/app/reload.ts journalConfigAtStart)
 * and lapses the approval, as a reload would have.
 */
export function leaveWhileDown(world: World): void {
  const approvals = world.journal.unsentApprovalsNow().filter((a) => (world.groups[a.group] ?? []).includes(a.by));
  const approver = approvals.length > 0 && world.chance(0.6) ? world.pick(approvals) : null;
  if (approver) world.hit('world.leave_while_down.approver_of_unsent');
  const group = approver?.group ?? world.pick(Object.keys(world.groups));
  const members = world.groups[group] ?? [];
  const person = approver?.by ?? (members.length > 0 ? world.pick(members) : null);
  if (person === null) return;
  world.groups[group] = members.filter((m) => m !== person);
  world.removed.push({ group, person });
  world.hit('world.leave_while_down');
}

/** Chance that a restart finds a group changed in the file while the server was down. */
const LEAVE_WHILE_DOWN_CHANCE = 0.15;

/** Boot a new process after `downtimeMs`; a crash during start-up boots another, calm after a few tries. */
export async function restart(world: World, downtimeMs: number): Promise<void> {
  let wait = downtimeMs;
  // Sometimes someone is taken out of a group while the server is down (never before the first start).
  if (wait > 0 && world.chance(LEAVE_WHILE_DOWN_CHANCE)) leaveWhileDown(world);
  for (let attempt = 0; ; attempt++) {
    world.clock.wallMs += wait;
    const scale = world.crashScale;
    if (attempt >= 3) world.crashScale = 0;
    const p = createProcess(world);
    world.process = p;
    try {
      await startUp(world, p);
      return;
    } catch (error) {
      world.expected('start-up', error);
      if (!p.life.dead) return;
      world.hit('restart.crashed_in_start_up');
    } finally {
      world.crashScale = scale;
    }
    wait = world.downtimeMs();
  }
}

/**
 * The ticker's pass (background.ts startTicker): SLA moves, the outbox's reminders and digests,
 * recovery of what is in flight, requests a stopped process left waiting their turn, approvals
 * left unsent, and half-done work (a request left NEW once a send could have finished); then the
 * outbox pass the catch-up after it kicks.
 */
export async function tickerPass(world: World, p: Process = world.process): Promise<void> {
  await world.guarded('tick', () => p.inbox.tick());
  await world.guarded('an outbox tick', () => p.outbox.tick());
  const recovered = await world.guarded('recovery', () => recoverInFlight(p));
  world.checkSwept('recovery', recovered);
  if (recovered) await world.guarded('reconcile', () => p.inbox.reconcile(recovered));
  // Requests another process accepted to wait their turn, long enough ago that it must have stopped.
  const queued = p.turns.length;
  await world.guarded('queue waiting', () => queueWaiting(p, world.clock.wallMs - limits.stripeTurnQueueMs - p.gate.claimTtlMs));
  world.hit('turn.adopted_by_ticker', Math.max(0, p.turns.length - queued));
  world.checkSwept('executeApproved', await world.guarded('executeApproved', () => p.inbox.executeApproved()));
  const newUntilMs = world.clock.wallMs - p.gate.claimTtlMs;
  world.checkSwept('refresh', await world.guarded('refresh', () => p.inbox.refresh({ newUntilMs })));
  await world.guarded('catch-up', () => p.views.current());
  // The catch-up saw new entries: the server kicks its outbox.
  await outboxPass(world, p);
}

/** The process's views, caught up with the journal; undefined when the read failed (the failure is judged). */
export function caughtUp(world: World, p: Process = world.process): Promise<CaughtUp | undefined> {
  return world.guarded('a read of the views', () => p.views.current());
}
