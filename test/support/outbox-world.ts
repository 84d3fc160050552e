import { expect } from 'vitest';
import { MemoryJournal } from '../../db/journal-store.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { FieldsOf } from '../../shared/entries.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import type { Channels, Delivery, DeliveryOutcome, NotificationsConfig } from '../../server/outbox/types.ts';
import { Views, type ViewsOptions } from '../../server/views/views.ts';
import { cleanUpDatabases, fakeClock, tempDbFile } from './db-journals.ts';

// The outbox's world for its tests: the notifications config, the entries the inbox and the gate
// write for a request, a channel that records what it is handed, and outboxes over views, on an
// in-memory journal (`outboxWorld`) or as servers sharing one SQLite file (`outboxFileWorld`).

export const HOUR = 3_600_000;

/** Where the application clock stands when a world is made. */
const APP_START_MS = 1_700_000_000_000;

/** Two people by email, a team channel, an agent called back; `cy` is told only when routed to. */
export const NOTIFICATIONS: NotificationsConfig = {
  publicUrl: 'https://interlock.example',
  reminderAtShare: 0.5,
  smtp: { host: 'smtp.example', port: 587, secure: false, user: null, password: null, from: 'Interlock <i@example.com>' },
  people: { ana: [{ kind: 'email', to: 'ana@example.com' }], bea: [{ kind: 'email', to: 'bea@example.com' }], cy: [{ kind: 'email', to: 'cy@example.com' }] },
  groups: { 'ap-leads': [{ kind: 'slack', url: 'https://hooks.slack.example/T/B/x' }] },
  agents: { bot: { url: 'https://agent.example/cb', secret: 'whsec_test' } },
  callbackAllowPrivate: [],
};

const TAKEN: DeliveryOutcome = { ok: true, status: 200, detail: 'ok' };
const TRY_LATER: DeliveryOutcome = { ok: false, status: 503, error: 'try later', retryable: true };

/** Every delivery is taken. */
export const TAKING: Channels = { deliver: async () => TAKEN };

/** A channel that records every delivery and answers `answers` first, in order; past them each is taken, or fails worth a retry while `failing`. */
export class RecordingChannels implements Channels {
  readonly delivered: Delivery[] = [];
  answers: DeliveryOutcome[] = [];
  failing = false;

  async deliver(delivery: Delivery): Promise<DeliveryOutcome> {
    this.delivered.push(delivery);
    return this.answers.shift() ?? (this.failing ? TRY_LATER : TAKEN);
  }
}

/** The PROPOSED the inbox writes for an agent's request (on `pi_1`, unless told). */
export function proposed(requestId: string, amount: number, options: { agent?: string; paymentIntent?: string; reason?: string } = {}): FieldsOf<'PROPOSED'> {
  const { agent = 'bot', paymentIntent = 'pi_1', reason = 'parcel never arrived' } = options;
  return {
    agent: 'inbox',
    lease: null,
    premises: { currency: 'usd', amount_paid: 10_000 },
    effect: { payment_intent: paymentIntent, amount },
    request: { id: requestId, agent, payment_intent: paymentIntent, amount, flags: [], reason },
  };
}

/** An ESCALATED as the inbox's openEscalation writes it (level 0, to ana and bea of ap-leads), with overrides. */
export function escalated(atMs: number, fields: Partial<FieldsOf<'ESCALATED'>> = {}): FieldsOf<'ESCALATED'> {
  return {
    at_ms: atMs,
    reason: 'needs_judgment',
    why: 'a rule wants a person to decide',
    detail: null,
    facts: { currency: 'usd' },
    changes: [],
    repairs: [],
    route: 'default',
    group: 'ap-leads',
    routed_to: ['ana', 'bea'],
    level: 0,
    due_ms: atMs + 4 * HOUR,
    breach: false,
    ...fields,
  };
}

/** Views that log nothing. */
const quiet = { fatal: () => {}, error: () => {} };

export interface OutboxWorldOptions {
  config?: NotificationsConfig;
  /** The channels every outbox delivers through; the world's recording ones unless told. */
  channels?: Channels;
  /** The jitter of retries. */
  random?: () => number;
  /** Wraps the journal each Outbox is given (not the views'), e.g. to slow one append down. */
  wrapJournal?: (journal: JournalStore) => JournalStore;
}

/** The outbox on an in-memory journal: one journal, its views, and an outbox per process (`outbox(owner)`). */
export function outboxWorld(options: OutboxWorldOptions = {}) {
  const wall = fakeClock();
  let appMs = APP_START_MS;
  const journal = new MemoryJournal(wall);
  const recording = new RecordingChannels();
  const channels = options.channels ?? recording;
  const log = { warnings: [] as string[], warn: (_fields: object, message: string) => void log.warnings.push(message), error: () => {} };
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => appMs, log: quiet });
  const outbox = (owner = 'p1') =>
    new Outbox({
      journal: options.wrapJournal ? options.wrapJournal(journal) : journal,
      current: async () => (await views.current()).outbox,
      notifications: options.config ?? NOTIFICATIONS,
      channels,
      nowMs: () => appMs,
      wallMs: () => wall.nowMs,
      owner,
      log,
      random: options.random ?? (() => 0.5),
    });
  return {
    journal,
    channels: recording,
    views,
    log,
    wall,
    outbox,
    advanceApp(ms: number) {
      appMs += ms;
    },
    setApp(ms: number) {
      appMs = ms;
    },
    get appMs() {
      return appMs;
    },
  };
}

/**
 * Servers on one SQLite file: each opens its own storage (`open`), its views on it (`viewsOn`, or
 * `server`, which replays at start too), and an outbox over them; `close` closes every storage
 * opened and removes the file.
 */
export function outboxFileWorld() {
  const wall = fakeClock();
  let appMs = APP_START_MS;
  const file = tempDbFile();
  const opened: Storage[] = [];

  async function open(): Promise<Storage> {
    const storage = await openStorage({ file });
    opened.push(storage);
    return storage;
  }

  /** Views on `storage`, not started: their tables the file's unless `derived`, their journal through `wrapJournal`, from zero unless told. */
  function viewsOn(storage: Storage, options: Pick<ViewsOptions, 'derived' | 'startFrom' | 'checkpoints'> & { wrapJournal?: (journal: JournalStore) => JournalStore } = {}): Views {
    const stored = storage.journal({ wallClockMs: () => wall.nowMs });
    const journal = options.wrapJournal ? options.wrapJournal(stored) : stored;
    const { startFrom, checkpoints } = options;
    return new Views({ journal, inboxName: 'inbox', nowMs: () => appMs, log: quiet, derived: options.derived ?? storage.derived, startFrom, checkpoints });
  }

  return {
    wall,
    open,
    viewsOn,
    /** A server's views on the file, replayed at start. */
    async server(options: Parameters<typeof viewsOn>[1] = {}): Promise<Views> {
      const views = viewsOn(await open(), options);
      expect(await views.replayAtStart()).toBeNull();
      return views;
    },
    /** An outbox over `views`, journaling through `journal` (the views' unless told). */
    outbox(views: Views, options: { owner: string; channels: Channels; journal?: JournalStore }): Outbox {
      return new Outbox({
        journal: options.journal ?? views.journal,
        current: async () => (await views.current()).outbox,
        notifications: NOTIFICATIONS,
        channels: options.channels,
        nowMs: () => appMs,
        wallMs: () => wall.nowMs,
        owner: options.owner,
        log: { warn: () => {}, error: () => {} },
        random: () => 0.5,
      });
    },
    async close(): Promise<void> {
      for (const storage of opened) await storage.close();
      cleanUpDatabases();
    },
    advanceApp(ms: number) {
      appMs += ms;
    },
    get appMs() {
      return appMs;
    },
  };
}

/** A journal that takes no message: the id of each message the outbox would journal is collected in `owed`. */
export function dryJournal(journal: JournalStore, owed: string[]): JournalStore {
  return new Proxy(journal, {
    get(target, property) {
      if (property === 'appendIf') {
        return async (_kind: string, id: string) => {
          owed.push(id);
          return { entry: null, blocker: 'a dry run' };
        };
      }
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
