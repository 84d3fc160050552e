import { createHash } from 'node:crypto';
import type { Entry, EntryKind, FieldsOf } from '../../shared/entries.ts';
import type { KillPoint } from '../../server/gate/kill-points.ts';
import type { AppendIfResult, ChainCheck, ClaimRequest, ReservationGuard } from '../../server/journal/store.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import { DIGEST_WINDOW_MS } from '../../server/outbox/state.ts';
import type { OutboxView } from '../../server/outbox/view.ts';
import { Views } from '../../server/views/views.ts';
import { SimChannels } from './outbox-channels.ts';
import type { Process } from './process.ts';
import { type Life, ProcessJournal, type SimJournal } from './sim-journal.ts';
import { CONFIG, type World } from './world.ts';

// The outbox in a simulated process, wired as server/app/services.ts wires it (its own journal calls,
// the process's views, the kill hook of the gate), its passes as server/app/interlock.ts runs them (a
// pass after each catch-up and every second, the ticker's reminders and digests), and the drain at
// the end of a seed that lets every retry come due. Two of the outbox's planted bugs live here.

/** Rounds of the drain at the end of a seed: far more than eight attempts of every message need. */
const DRAIN_ROUNDS_MAX = 200;

/**
 * A journal for the outbox with a planted bug: `outbox_no_dedupe` journals each message again under
 * another id; `outbox_skip_record` drops the record of every delivery.
 */
class PlantedOutboxJournal extends ProcessJournal {
  constructor(
    shared: SimJournal,
    life: Life,
    private readonly plant: 'outbox_no_dedupe' | 'outbox_skip_record',
  ) {
    super(shared, life);
  }

  override async appendIf<K extends EntryKind>(
    kind: K,
    effectId: string,
    check: ChainCheck,
    fields: FieldsOf<K>,
    claim?: ClaimRequest,
    guard?: ReservationGuard,
  ): Promise<AppendIfResult<K>> {
    if (this.plant === 'outbox_skip_record' && kind === 'ATTEMPT' && (fields as unknown as FieldsOf<'ATTEMPT'>).outcome === 'delivered') return { entry: null, blocker: 'planted' };
    const result = await super.appendIf(kind, effectId, check, fields, claim, guard);
    if (this.plant === 'outbox_no_dedupe' && kind === 'MESSAGE' && result.blocker === null) {
      // Another id of the same shape: the same prefix, other hex digits.
      const again = effectId.replace(/[0-9a-f]+$/, (hex) => createHash('sha256').update(`${effectId} again`).digest('hex').slice(0, hex.length));
      await super.appendIf(kind, again, check, fields);
    }
    return result;
  }
}

/** What the planted bug `outbox_early_final` shows the outbox: every decision as a rejection, which closes the request. */
function everyDecisionCloses(entry: Entry): Entry {
  return entry.kind === 'DECIDED' && entry.decision === 'approve' ? { ...entry, decision: 'reject' } : entry;
}

/** What a process's outbox is built from. */
export interface OutboxParts {
  id: number;
  life: Life & { onDeath(listener: () => void): void };
  journal: ProcessJournal;
  views: Views;
  killHook: (point: KillPoint, effectId: string) => void;
}

/** The outbox of one simulated process, wired as services.ts wires it. */
export function createOutbox(world: World, parts: OutboxParts): Outbox {
  const { plant } = world.options;
  const journal = plant === 'outbox_no_dedupe' || plant === 'outbox_skip_record' ? new PlantedOutboxJournal(world.journal, parts.life, plant) : parts.journal;
  const views =
    plant === 'outbox_early_final'
      ? new Views({
          journal: new ProcessJournal(world.journal, parts.life, everyDecisionCloses),
          inboxName: CONFIG.inboxName,
          nowMs: () => world.clock.wallMs,
          log: { fatal: () => {}, error: () => {} },
        })
      : parts.views;
  return new Outbox({
    journal,
    current: async () => (await views.current()).outbox,
    notifications: CONFIG.notifications,
    channels: new SimChannels(world, parts.life),
    nowMs: () => world.clock.wallMs,
    wallMs: () => world.clock.wallMs,
    owner: `sim-${parts.id}-outbox`,
    killHook: parts.killHook,
    log: {
      warn: () => world.hit('outbox.gave_up'),
      // A pass that failed is logged with its error: a crash is expected, anything else is a finding.
      error: (fields, message) => {
        const error = (fields as { err?: unknown }).err;
        if (error === undefined) world.violation(`the outbox logged an error: ${message}`);
        else world.expected(`the outbox (${message})`, error);
      },
    },
    random: () => world.rng.random(),
  });
}

/** One outbox pass, as the server kicks one after a catch-up that saw new entries, and every second. */
export async function outboxPass(world: World, p: Process = world.process): Promise<void> {
  await p.outbox.kick();
}

/** Time passes (the outbox's timer, or until the next retry is due) and the outbox runs a pass. */
export async function outboxTimer(world: World): Promise<void> {
  const views = await world.guarded('a read of the views', () => world.process.views.current());
  const next = views ? await nextDueMs(views.outbox) : null;
  if (next !== null && next > world.clock.wallMs && world.chance(0.4)) {
    world.hit('outbox.timer.to_retry');
    world.clock.wallMs = next;
  } else {
    world.clock.wallMs += world.rng.randint(1, 30) * 1_000;
  }
  await outboxPass(world);
}

/**
 * When the outbox next owes work, on the simulated clock: the earliest retry of a message neither
 * delivered nor given up, or the close of a digest window whose held messages have no digest yet.
 * Null when nothing more is owed.
 */
export async function nextDueMs(outbox: OutboxView): Promise<number | null> {
  let next: number | null = null;
  const consider = (atMs: number) => {
    next = next === null ? atMs : Math.min(next, atMs);
  };
  for (const message of outbox.undelivered()) if (message.nextAtMs !== null) consider(message.nextAtMs);
  const held = outbox.held();
  // The digests sent are read from the tables only when a message is held for one.
  const digests = held.length === 0 ? [] : (await outbox.history.allMessages()).filter((m) => m.event === 'digest');
  for (const message of held) {
    const window = Number(message.held!.slice('digest:'.length));
    const carried = digests.some(
      (d) => d.level === window && d.recipient.name === message.recipient.name && d.channel === message.channel && (d.content.items ?? []).some((i) => i.effect_id === message.about),
    );
    if (!carried) consider((window + 1) * DIGEST_WINDOW_MS);
  }
  return next;
}

/**
 * The end of a seed: with no more crashes, let every retry and every digest come due, on the
 * server running now, until the outbox owes nothing. Channels still fail now and then, so a
 * message may still be given up.
 */
export async function drainOutbox(world: World): Promise<void> {
  const p = world.process;
  for (let round = 0; round < DRAIN_ROUNDS_MAX; round++) {
    await world.guarded('an outbox tick', () => p.outbox.tick());
    await outboxPass(world, p);
    const views = await world.guarded('a read of the views', () => p.views.current());
    const next = views ? await nextDueMs(views.outbox) : null;
    if (next === null) return;
    world.hit('outbox.drain.round');
    world.clock.wallMs = Math.max(world.clock.wallMs + 1_000, next);
  }
}
