import { limits } from '../../shared/limits.ts';
import { KILL_POINTS } from '../../server/gate/kill-points.ts';
import { waitsItsTurn } from '../../server/inbox/state.ts';
import {
  agentConcurrent,
  agentDuplicate,
  agentNew,
  agentPoll,
  agentRedecide,
  approverDecide,
  approverStaleTab,
  inboxReshow,
  raceApprovalExpiry,
  dispute,
  handRefund,
  restoreMember,
  revokeMember,
  settleRefund,
} from './actors.ts';
import type { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { checkDerivedTables } from './derived-invariants.ts';
import { checkCheckpoints, signCheckpointNow } from './checkpoint-invariants.ts';
import { auditViews, checkInvariants, checkReceipts } from './invariants.ts';
import { deliverWebhook, keyWindow, rateLimitSpell, reconcileLookups, slaTick, ticker, tickerTwoServers, toDeadline } from './stripe-actors.ts';
import { checkNothingUnplanned } from './outbox-invariants.ts';
import { drainOutbox, outboxPass, outboxTimer } from './outbox-process.ts';
import { caughtUp, restart, tickerPass } from './process.ts';
import { FAULTS, type Plant, type SimOptions, World } from './world.ts';

// A seeded whole-system simulator (after TigerBeetle's VOPR and FoundationDB's simulation): one
// seed is one deterministic run of the real gate, inbox, confirmation recording and scoreboard
// over a shared MemoryJournal and the in-memory payments service, with random agents, approvers,
// outside changes, webhooks, SLA ticks and crashes on a simulated clock. Calls to Stripe take
// simulated time; the clock jumps to the next wake-up only once every task waits (World.run), and
// nothing waits on a real timer or I/O, so a seed replays exactly. After the run settles, every
// invariant is checked.

/** One kind of step, and how often it is chosen. */
interface Actor {
  name: string;
  weight: number;
  run(world: World): Promise<void>;
}

const ACTORS: readonly Actor[] = [
  { name: 'agent.new', weight: 16, run: agentNew },
  { name: 'agent.duplicate', weight: 6, run: agentDuplicate },
  { name: 'agent.redecide', weight: 4, run: agentRedecide },
  { name: 'agent.poll', weight: 3, run: agentPoll },
  { name: 'agent.concurrent', weight: 6, run: (world) => agentConcurrent(world) },
  { name: 'race.approval_expiry', weight: 3, run: raceApprovalExpiry },
  { name: 'approver.decide', weight: 18, run: approverDecide },
  { name: 'approver.stale_tab', weight: 4, run: approverStaleTab },
  { name: 'inbox.reshow', weight: 4, run: inboxReshow },
  { name: 'world.hand_refund', weight: 4, run: handRefund },
  { name: 'world.dispute', weight: 2, run: dispute },
  { name: 'world.revoke_member', weight: 3, run: revokeMember },
  { name: 'world.restore_member', weight: 2, run: restoreMember },
  { name: 'stripe.settle_refund', weight: 5, run: settleRefund },
  { name: 'stripe.webhook', weight: 10, run: (world) => deliverWebhook(world) },
  { name: 'stripe.rate_limit_spell', weight: 1, run: rateLimitSpell },
  { name: 'reconciler.lookup', weight: 3, run: reconcileLookups },
  { name: 'clock.sla_tick', weight: 8, run: slaTick },
  { name: 'clock.key_window', weight: 1, run: keyWindow },
  { name: 'clock.to_deadline', weight: 4, run: toDeadline },
  { name: 'ticker.pass', weight: 6, run: ticker },
  { name: 'ticker.two_servers', weight: 2, run: tickerTwoServers },
  { name: 'outbox.timer', weight: 6, run: outboxTimer },
  { name: 'audit.views', weight: 2, run: auditViews },
  { name: 'audit.checkpoint', weight: 3, run: signCheckpointNow },
];
const TOTAL_WEIGHT = ACTORS.reduce((sum, a) => sum + a.weight, 0);

/** Steps per seed: tens, so a thousand seeds stay well inside a minute and a half. */
const STEPS_MIN = 25;
const STEPS_MAX = 60;

/** What must fire at least once in a run of many seeds, or the run fails: each actor, kill point and fault. */
export const REQUIRED_COVERAGE: readonly string[] = [
  ...ACTORS.map((a) => `actor.${a.name}`),
  ...KILL_POINTS.map((point) => `kill.${point}`),
  'crash.append_before',
  'crash.append_after',
  ...FAULTS.map((fault) => `fault.${fault}`),
  'restart',
  'restart.long_outage',
  'restart.within_claim_ttl',
  'agent.concurrent.identical',
  'agent.concurrent.conflicting_first',
  'agent.concurrent.two_servers',
  'agent.concurrent.contended',
  'agent.concurrent.with_approval',
  'race.approval_expiry.armed',
  'clock.to_deadline.approval_expiry',
  'clock.to_deadline.sla_due',
  'clock.to_deadline.claim_expiry',
  'clock.to_deadline.key_window',
  'restart.second_server_died',
  'approver.approve',
  'approver.approve_later',
  // A reload took someone out of a group while their approval waited to be sent: it lapsed at once.
  'world.revoke_member.lapsed',
  'check.reload',
  // Someone left a group while the server was down: the start journaled it and the approval lapsed.
  'start.config_journaled',
  'start.config_lapsed',
  'check.config_at_start',
  'approver.reject',
  'approver.repair',
  'approver.outsider',
  'check.decision_allowed',
  'check.stale_tab',
  'approver.stale_tab.SUPERSEDED',
  'inbox.reshow.written',
  'check.reused_id',
  'webhook.duplicated',
  'webhook.reordered',
  'webhook.late',
  'webhook.before_commit',
  'journal.blocked.DISPATCHED.reservation_moved',
  'oracle.dispatch',
  'oracle.resend',
  // Payments in every kind of currency, and sends with no person in a currency other than dollars.
  'currency.usd',
  'currency.eur',
  'currency.jpy',
  'currency.krw',
  'currency.kwd',
  'oracle.policy_send.eur',
  'oracle.policy_send.jpy',
  'outbox.delivered.escalated',
  'outbox.delivered.moved_up',
  'check.checkpoint_extends',
  'check.checkpoint_holds',
  'outbox.delivered.breach',
  'outbox.delivered.reminder',
  'outbox.delivered.digest',
  'outbox.delivered.final',
  'outbox.delivered.failed_at_stripe',
  'outbox.delivered_after_retry',
  'outbox.delivered_twice',
  'outbox.settled.gave_up',
  'outbox.settled.held',
  'outbox.channel.timeout',
  'outbox.channel.refused',
  'outbox.channel.lost_answer',
  'outbox.crash_between_send_and_record',
  'outbox.drain.round',
  'check.outbox_planned',
  'fault.send_lock_timeout.contended',
  'fault.send_rate_limit.in_spell',
  'stripe.spell.past_retry_window',
  'gate.busy_let_go',
  'oracle.resend.after_rate_limit',
  'check.rate_limited',
  'turn.waiting',
  'turn.decided',
  'turn.queued_at_start_up',
  'check.waited_turn',
  // Agents' calls carry an x-request-id, kept on the PROPOSED they wrote and nowhere else.
  'check.http_request_id',
  // The derived tables written as the run went, rebuilt from its journal, and loaded from a copy taken mid-run, agree.
  'check.derived',
  'check.derived_view',
  'check.derived_loaded',
];

/** Runs of fewer seeds than this are not failed for coverage (a replay of one seed fires little). */
export const COVERAGE_SEEDS_MIN = 100;

/** The outcome of one seed. */
export interface SeedReport {
  seed: number;
  violations: string[];
  journalHash: string;
  entries: number;
  coverage: ReadonlyMap<string, number>;
}

function pickActor(world: World): Actor {
  let roll = world.rng.random() * TOTAL_WEIGHT;
  for (const actor of ACTORS) {
    roll -= actor.weight;
    if (roll < 0) return actor;
  }
  return ACTORS.at(-1)!;
}

/** Run one seed to the end and check it. */
export async function runSeed(seed: number, options: SimOptions = {}): Promise<SeedReport> {
  const world = new World(seed, options);
  await world.run(() => restart(world, 0));
  await keepAlive(world);
  const steps = world.rng.randint(STEPS_MIN, STEPS_MAX);
  // On the seeds that compare the derived tables, a copy of them is taken from a step of the run on
  // (the first with tables written): at the end a new server loads it over the final journal.
  const comparesTables = comparesDerivedTables(seed);
  const copyFrom = copyStep(seed, steps);
  let copy: MemoryDerivedTables | null = null;
  for (let step = 1; step <= steps; step++) {
    world.step = step;
    const actor = pickActor(world);
    world.hit(`actor.${actor.name}`);
    await world.run(() => world.guarded(actor.name, () => actor.run(world)));
    world.observeLedger();
    await keepAlive(world);
    if (comparesTables && copy === null && step >= copyFrom && (await world.derived.cursor()) !== null) copy = world.derived.clone();
  }
  await world.run(() => settle(world));
  const journal = await world.run(() => checkInvariants(world));
  if (comparesTables) await world.run(() => checkDerivedTables(world, copy));
  await world.run(() => checkCheckpoints(world));
  await checkReceipts(world, journal.chains);
  return { seed, violations: world.violations, journalHash: journal.hash, entries: journal.entries, coverage: world.coverage };
}

/**
 * Whether a seed compares its derived tables three ways (derived-invariants.ts): the odd seeds.
 * The comparison replays the journal twice more; on every seed it costs the 1,000-seed run more
 * than the run may grow (docs/internals/simulator.md has the figures).
 */
export function comparesDerivedTables(seed: number): boolean {
  return seed % 2 === 1;
}

/** The step from which a copy of the derived tables is taken: anywhere in the run, the same for a seed every time. */
function copyStep(seed: number, steps: number): number {
  return 1 + ((Math.imul(seed, 0x9e3779b1) >>> 0) % steps);
}

/**
 * Boot a new process while the one running is dead: after a step, and again when work its start-up
 * left running (the requests it queued again to wait their turn) crashed it after start-up was done.
 */
async function keepAlive(world: World): Promise<void> {
  for (let boots = 0; world.process.life.dead; boots++) {
    world.hit(boots === 0 ? 'restart' : 'restart.died_after_start_up');
    await world.run(() => restart(world, world.downtimeMs()));
  }
}

/**
 * Let the run come to rest with no more crashes or faults, on the server running now (no restart:
 * a live server must settle everything by its background pass alone): past the claim TTL, so
 * every claim a dead process held has lapsed (and, when a dead process left requests waiting
 * their turn, past the time after which the ticker takes them up), a ticker pass, the requests
 * waiting their turn decided, every queued webhook delivered.
 */
async function settle(world: World): Promise<void> {
  world.step += 1;
  world.crashScale = 0;
  world.faultsOn = false;
  const p = world.process;
  world.clock.wallMs += limits.claimTtlMs + 1;
  if ((await waitingTurns(world)).some((id) => !p.turns.holds(id))) world.clock.wallMs += limits.stripeTurnQueueMs;
  await tickerPass(world);
  // The queue works beside the pass; a request whose read failed goes to its back a moment later.
  for (let waitedMs = 0; waitedMs < TURNS_SETTLE_MS && (p.turns.length > 0 || (await waitingTurns(world)).length > 0); waitedMs += 1_000) {
    await world.sleep(1_000);
  }
  world.observeLedger();
  while (world.webhooks.length > 0) await deliverWebhook(world, 0);
  // Whatever the webhooks made final is told; then nothing the journal owes may be left undecided.
  await outboxPass(world);
  await checkNothingUnplanned(world);
  await drainOutbox(world);
}

/** How long the settled run waits for the requests waiting their turn to be decided. */
const TURNS_SETTLE_MS = 60_000;

/** The requests of the inbox waiting their turn now. */
async function waitingTurns(world: World): Promise<string[]> {
  const views = await caughtUp(world);
  return [...(views?.inbox.work.unfinished() ?? [])].filter((id) => waitsItsTurn(world.journal.chainNow(id)));
}

/** The command that replays one seed exactly. */
export function replayCommand(seed: number, plant?: Plant): string {
  return `npm run simulate -- --seed ${seed}${plant ? ` --plant ${plant}` : ''}`;
}

/** What a run of many seeds came to. */
export interface RunSummary {
  seeds: number;
  violations: number;
  failedSeeds: number[];
  coverage: Map<string, number>;
  missing: string[];
  seconds: number;
  /** Every line the run printed, in order. */
  lines: string[];
}

/** Run seeds `first` … `first + count - 1`, printing each violation with its replay command, then the figures. */
export async function runSeeds(
  first: number,
  count: number,
  options: SimOptions & { print?: (line: string) => void; stopAtFirstFailure?: boolean } = {},
): Promise<RunSummary> {
  const lines: string[] = [];
  const print = (line: string) => {
    lines.push(line);
    options.print?.(line);
  };
  const started = performance.now();
  const coverage = new Map<string, number>();
  const failedSeeds: number[] = [];
  let violations = 0;
  let seeds = 0;
  for (let seed = first; seed < first + count; seed++) {
    const report = await runSeed(seed, options);
    seeds += 1;
    for (const [key, n] of report.coverage) coverage.set(key, (coverage.get(key) ?? 0) + n);
    if (count === 1) print(`seed ${seed}: journal ${report.journalHash} (${report.entries} entries)`);
    if (report.violations.length > 0) {
      failedSeeds.push(seed);
      violations += report.violations.length;
      print(`seed ${seed}: ${report.violations.length} violation${report.violations.length === 1 ? '' : 's'}`);
      for (const violation of report.violations.slice(0, 10)) print(`  ${violation}`);
      if (report.violations.length > 10) print(`  … and ${report.violations.length - 10} more`);
      print(`  replay: ${replayCommand(seed, options.plant)}`);
      if (options.stopAtFirstFailure) break;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const missing = seeds >= COVERAGE_SEEDS_MIN ? REQUIRED_COVERAGE.filter((key) => !coverage.get(key)) : [];
  print('');
  print('coverage (times fired over the run):');
  for (const key of [...coverage.keys()].sort()) print(`  ${key.padEnd(44)} ${coverage.get(key)}`);
  if (seeds < COVERAGE_SEEDS_MIN) print(`coverage is not required of a run of fewer than ${COVERAGE_SEEDS_MIN} seeds`);
  for (const key of missing) print(`NEVER FIRED: ${key}`);
  print(`${(seeds / seconds).toFixed(1)} seeds/s (${seconds.toFixed(1)} s)`);
  if (failedSeeds.length > 0) print(`failing seeds: ${failedSeeds.slice(0, 20).join(', ')}${failedSeeds.length > 20 ? ', …' : ''}`);
  print(`${seeds} seeds, ${violations} violations`);
  return { seeds, violations, failedSeeds, coverage, missing, seconds, lines };
}
