import type { Entry } from '../../shared/entries.ts';
import type { Json } from '../../shared/json.ts';
import type { Status } from '../../shared/statuses.ts';
import { Gate } from '../../server/gate/gate.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { Inbox, type InboxRequest } from '../../server/inbox/inbox.ts';
import { policyFromConfig } from '../../server/inbox/policy.ts';
import { InboxProjection, projectedWork } from '../../server/inbox/projection.ts';
import { JournalFollower } from '../../server/live/follower.ts';
import { ScoreboardProjection } from '../../server/scoreboard/projection.ts';
import { ProcessTarget } from './process-target.ts';
import { type Life, ProcessJournal } from './sim-journal.ts';
import { CONFIG, type World } from './world.ts';

// A simulated server process, wired as server/services.ts wires one, and the start-up and ticker
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
  projection: InboxProjection;
  scoreboard: ScoreboardProjection;
  follower: JournalFollower;
}

/**
 * The key a request is remembered under, as services.ts keys it: the agent and request id, and for
 * a repair child the request it repairs.
 */
export function requestKeyOf(request: InboxRequest): Json {
  const key = { agent: String(request.agent), request_id: request.id };
  return request.repair_of === undefined ? key : { ...key, repair_of: String(request.repair_of) };
}

/** Settle what a crash left in flight, for the chains the caught-up projection shows open (services.ts recoverInFlight). */
async function recoverInFlight(p: Process): Promise<Map<string, Status>> {
  await p.follower.catchUp();
  return p.gate.recover({ candidates: p.projection.work.sending() });
}

/** The life of one process: its crashes come from the world's dice. */
class ProcessLife implements Life {
  dead = false;

  constructor(private readonly world: World) {}

  note(key: string): void {
    this.world.hit(key);
  }

  maybeCrash(point: string): void {
    if (this.dead) throw new SimulatedCrash('the process is dead');
    const chance = this.world.crashChance(point);
    if (chance === 0 || !this.world.chance(chance)) return;
    this.dead = true;
    const [where, detail] = point.split(':');
    this.world.hit(where === 'kill' ? `kill.${detail}` : `crash.${where}`);
    if (where !== 'kill') this.world.hit(`crash.${where}.${detail}`);
    throw new SimulatedCrash(`crashed at ${point}`);
  }
}

/** A new process over the shared journal and payments service, wired as services.ts wires a server. */
export function createProcess(world: World): Process {
  world.processCount += 1;
  const id = world.processCount;
  const life = new ProcessLife(world);
  const journal = new ProcessJournal(world.journal, life);
  const target = new ProcessTarget(world, life);
  const authority = world.authority();
  const gate = new Gate({
    journal,
    target,
    leases: authority,
    wallClockMs: () => world.clock.wallMs,
    owner: `sim-${id}`,
    killHook: (point, effectId) => {
      world.hit(`reached.${point}`);
      life.maybeCrash(`kill:${point}`);
      if (point === 'recovery_resend') world.resending.add(effectId);
    },
  });
  const projection = new InboxProjection(CONFIG.inboxName);
  const scoreboard = new ScoreboardProjection(CONFIG.inboxName);
  const follower = new JournalFollower(journal);
  const process: Process = { id, life, journal, target, gate, inbox: undefined as unknown as Inbox, projection, scoreboard, follower };
  let listening = false;
  follower.on('entry', (entry: Entry) => {
    scoreboard.note(entry);
    if (world.options.plant === 'drop_confirmed' && entry.kind === 'CONFIRMED') return;
    if (listening) projection.apply(entry);
    else projection.fold(entry);
  });
  follower.once('caughtUp', () => {
    listening = true;
  });
  const inbox: Inbox = new Inbox({
    name: CONFIG.inboxName,
    gate,
    authority,
    policy: policyFromConfig(CONFIG),
    capture: async (request) => {
      const paymentIntent = String(request.payment_intent);
      return target.capture(paymentIntent, (await journal.reservations(paymentIntent)).open);
    },
    effectOf: (request) => ({ payment_intent: String(request.payment_intent), amount: request.amount as number }),
    requestKeyOf,
    nowMs: () => world.clock.wallMs,
    listChains: async () => {
      await follower.catchUp();
      return projection.ownedIds();
    },
    work: projectedWork(projection, () => follower.catchUp(), (request) => inbox.effectIdOf(request)),
    onError: (effectId, error) => world.expected(`a sweep of ${effectId}`, error),
  });
  process.inbox = inbox;
  return process;
}

/** Start-up, in startServices' order: replay, recover what was in flight, reconcile, refresh, send approvals left unsent. */
export async function startUp(world: World, p: Process): Promise<void> {
  await p.follower.catchUp();
  const recovered = await recoverInFlight(p);
  world.checkSwept('recovery at start-up', recovered);
  await p.inbox.reconcile(recovered);
  world.checkSwept('refresh at start-up', await p.inbox.refresh());
  world.checkSwept('executeApproved at start-up', await p.inbox.executeApproved());
  await p.follower.catchUp();
}

/** Boot a new process after `downtimeMs`; a crash during start-up boots another, calm after a few tries. */
export async function restart(world: World, downtimeMs: number): Promise<void> {
  let wait = downtimeMs;
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

/** The ticker's pass (runtime.ts startTicker): SLA moves, recovery of what is in flight, approvals left unsent. */
export async function tickerPass(world: World, p: Process = world.process): Promise<void> {
  await world.guarded('tick', () => p.inbox.tick());
  const recovered = await world.guarded('recovery', () => recoverInFlight(p));
  world.checkSwept('recovery', recovered);
  if (recovered) await world.guarded('reconcile', () => p.inbox.reconcile(recovered));
  world.checkSwept('executeApproved', await world.guarded('executeApproved', () => p.inbox.executeApproved()));
  await world.guarded('catch-up', () => p.follower.catchUp());
}
