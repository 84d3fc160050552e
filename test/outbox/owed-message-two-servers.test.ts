import { afterAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { FieldsOf } from '../../shared/entries.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import type { Channels, DeliveryOutcome, NotificationsConfig } from '../../server/outbox/types.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, tempDbFile } from '../support/db-journals.ts';

// Two servers on one SQLite file. One journals the messages an escalation owes while the other is
// between reading a page of the journal and writing the tables: the other finds the tables moved
// past its page, and then reads those messages. Each server holds every message still owed, as
// one started afresh on the same file does, so that either can deliver it if the other dies.

const CONFIG: NotificationsConfig = {
  publicUrl: 'https://interlock.example',
  reminderAtShare: 0.5,
  smtp: { host: 'smtp.example', port: 587, secure: false, user: null, password: null, from: 'Interlock <i@example.com>' },
  people: { ana: [{ kind: 'email', to: 'ana@example.com' }], bea: [{ kind: 'email', to: 'bea@example.com' }] },
  groups: { 'ap-leads': [{ kind: 'slack', url: 'https://hooks.slack.example/T/B/x' }] },
  agents: { bot: { url: 'https://agent.example/cb', secret: 'whsec_test' } },
  callbackAllowPrivate: [],
};

const HOUR = 3_600_000;

const proposed: FieldsOf<'PROPOSED'> = {
  agent: 'inbox',
  lease: null,
  premises: { currency: 'usd', amount_paid: 10_000 },
  effect: { payment_intent: 'pi_1', amount: 1_001 },
  request: { id: 'case-1', agent: 'bot', payment_intent: 'pi_1', amount: 1_001, flags: [], reason: 'cracked jar' },
};

const escalated = (atMs: number): FieldsOf<'ESCALATED'> => ({
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
});

const taking: Channels = { deliver: async (): Promise<DeliveryOutcome> => ({ ok: true, status: 200, detail: 'ok' }) };

const wall = fakeClock();
const appMs = 1_700_000_000_000;
const file = tempDbFile();
const opened: Storage[] = [];
const quiet = { fatal: () => {}, error: () => {} };

afterAll(async () => {
  for (const storage of opened) await storage.close();
  cleanUpDatabases();
});

/** A server's views on the file; `afterScan` runs once each page is read, before the views apply it. */
async function server(afterScan?: () => Promise<void>): Promise<Views> {
  const storage = await openStorage({ file });
  opened.push(storage);
  const stored = storage.journal({ wallClockMs: () => wall.nowMs });
  const journal = new Proxy(stored, {
    get(target, property) {
      if (property === 'scan' && afterScan !== undefined) {
        return async (...args: Parameters<JournalStore['scan']>) => {
          const page = await target.scan(...args);
          if (page.length > 0) await afterScan();
          return page;
        };
      }
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => appMs, log: quiet, derived: storage.derived });
  expect(await views.replayAtStart()).toBeNull();
  return views;
}

const dueIds = async (views: Views) => (await views.current()).outbox.due(wall.nowMs + HOUR).map((message) => message.id).sort();

describe('messages owed, from two servers on one journal', () => {
  it('are held by a server that finds the tables written past its page by the other', async () => {
    const a = await server();
    let between: (() => Promise<void>) | null = null;
    const b = await server(async () => {
      const run = between;
      between = null;
      await run?.();
    });
    const worker = new Outbox({
      journal: a.journal,
      current: async () => (await a.current()).outbox,
      notifications: CONFIG,
      channels: taking,
      nowMs: () => appMs,
      wallMs: () => wall.nowMs,
      owner: 'server-a',
      log: { warn: () => {}, error: () => {} },
      random: () => 0.5,
    });
    const effectId = effectIdOf(1);
    await a.journal.append('PROPOSED', effectId, proposed);
    await a.journal.append('ESCALATED', effectId, escalated(appMs));
    // While B holds its page of the escalation, A journals the three messages it owes (not
    // attempted yet) and writes the tables past them.
    between = async () => {
      expect(await worker.plan()).toBe(3);
      await a.current();
    };
    await b.current();
    expect(between).toBeNull();
    const fromA = await dueIds(a);
    expect(fromA).toHaveLength(3);
    const fresh = await server();
    expect(await dueIds(fresh)).toEqual(fromA);
    expect(await dueIds(b)).toEqual(fromA);
  });
});
