import { MemoryJournal } from '../../db/journal-store.ts';
import type { FieldsOf } from '../../shared/entries.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import type { Channels, Delivery, DeliveryOutcome, NotificationsConfig } from '../../server/outbox/types.ts';
import { Views } from '../../server/views/views.ts';
import { fakeClock } from '../support/db-journals.ts';

// The outbox on an in-memory journal, fed the entries the inbox and the gate write, for the
// adversarial outbox tests (the same shape as test/outbox/outbox-core.test.ts's world).

export const HOUR = 3_600_000;

/** A channel that records every delivery and answers 2xx, unless `answer` says otherwise. */
export class RecordingChannels implements Channels {
  readonly delivered: Delivery[] = [];
  answer: (delivery: Delivery) => DeliveryOutcome = () => ({ ok: true, status: 200, detail: 'ok' });

  async deliver(delivery: Delivery): Promise<DeliveryOutcome> {
    this.delivered.push(delivery);
    return this.answer(delivery);
  }
}

export interface OutboxWorldOptions {
  config: NotificationsConfig;
  channels?: Channels;
  /** Wraps the journal each Outbox is given (not the views'), e.g. to slow one append down. */
  wrapJournal?: (journal: JournalStore) => JournalStore;
}

export function outboxWorld(options: OutboxWorldOptions) {
  const wall = fakeClock();
  let appMs = 1_700_000_000_000;
  const journal = new MemoryJournal(wall);
  const recording = new RecordingChannels();
  const channels = options.channels ?? recording;
  const log = { warnings: [] as { fields: object; message: string }[], warn: (fields: object, message: string) => void log.warnings.push({ fields, message }), error: () => {} };
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => appMs, log: { fatal: () => {}, error: () => {} } });
  const outbox = (owner = 'p1') =>
    new Outbox({
      journal: options.wrapJournal ? options.wrapJournal(journal) : journal,
      current: async () => (await views.current()).outbox,
      notifications: options.config,
      channels,
      nowMs: () => appMs,
      wallMs: () => wall.nowMs,
      owner,
      log,
      random: () => 0.5,
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

/** The PROPOSED the inbox writes for an agent's request. */
export function proposed(requestId: string, amount: number, agent = 'bot'): FieldsOf<'PROPOSED'> {
  return {
    agent: 'inbox',
    lease: null,
    premises: { currency: 'usd', amount_paid: 10_000 },
    effect: { payment_intent: 'pi_1', amount },
    request: { id: requestId, agent, payment_intent: 'pi_1', amount, flags: [], reason: 'parcel never arrived' },
  };
}

/** An ESCALATED as the inbox's openEscalation writes it (level 0), with overrides. */
export function escalated(atMs: number, fields: Partial<FieldsOf<'ESCALATED'>> = {}): FieldsOf<'ESCALATED'> {
  return {
    at_ms: atMs,
    reason: 'needs_judgment',
    why: 'a rule wants a person to decide',
    detail: null,
    facts: { currency: 'usd', amount_paid: 10_000 },
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
