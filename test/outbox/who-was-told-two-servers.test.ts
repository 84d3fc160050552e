import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { FieldsOf } from '../../shared/entries.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import type { Channels, DeliveryOutcome, NotificationsConfig } from '../../server/outbox/types.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, tempDbFile } from '../support/db-journals.ts';

// Two servers on one SQLite file: one decides a request and journals its agent's callback, the
// other, which had let the closed item go, folds that message. "Who was told" about the item is
// the same from each, and the same as from views rebuilt from the journal.

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

/** Every delivery is taken. */
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

async function server(derived?: MemoryDerivedTables): Promise<Views> {
  const storage = await openStorage({ file });
  opened.push(storage);
  const views = new Views({ journal: storage.journal({ wallClockMs: () => wall.nowMs }), inboxName: 'inbox', nowMs: () => appMs, log: quiet, derived: derived ?? storage.derived });
  expect(await views.replayAtStart()).toBeNull();
  return views;
}

function outboxOf(views: Views): Outbox {
  return new Outbox({
    journal: views.journal,
    current: async () => (await views.current()).outbox,
    notifications: CONFIG,
    channels: taking,
    nowMs: () => appMs,
    wallMs: () => wall.nowMs,
    owner: 'two-servers',
    log: { warn: () => {}, error: () => {} },
    random: () => 0.5,
  });
}

const toldAbout = async (views: Views, effectId: string) => (await (await views.current()).outbox.history.notificationsAbout(effectId)).map((told) => JSON.stringify(told));

describe('who was told, from two servers on one journal', () => {
  it('lists the agent’s callback once on the server that folds it after letting the item go', async () => {
    const a = await server();
    const b = await server();
    const effectId = effectIdOf(1);
    const journal = a.journal;
    await journal.append('PROPOSED', effectId, proposed);
    const escalation = await journal.append('ESCALATED', effectId, escalated(appMs));
    const worker = outboxOf(a);
    await worker.kick();
    await journal.append('DECIDED', effectId, { at_ms: appMs, by: 'ana', decision: 'reject', escalation: escalation.hash, group: 'ap-leads', members: ['ana', 'bea'], repair: null });
    // B folds the decision, and lets the closed item go at its next catch-up.
    await b.current();
    await b.current();
    expect((await b.current()).outbox.inMemory.items).toBe(0);
    // A journals the agent's callback (not attempted yet) and writes the tables past it.
    expect(await worker.plan()).toBe(1);
    await a.current();
    const fromA = await toldAbout(a, effectId);
    expect(fromA).toHaveLength(4);
    const rebuilt = await server(new MemoryDerivedTables());
    expect(await toldAbout(rebuilt, effectId)).toEqual(fromA);
    // B folds the callback, reads the item back from its row: the callback is listed once.
    expect(await toldAbout(b, effectId)).toEqual(fromA);
  });
});
