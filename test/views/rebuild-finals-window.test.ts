import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import type { NotificationsConfig } from '../../server/outbox/types.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';
import { dryJournal, NOTIFICATIONS, RecordingChannels } from '../support/outbox-world.ts';

// A rebuild lets the outbox's closed items go page by page, and keeps touched only the final items
// whose agent's callback may still be owed: those within the delivery window (24 h) of the newest
// final news, as a start on kept tables hands the planner (server/outbox/view.ts `evict`). Items
// made final weeks before the newest owe nothing and must be neither planned nor read back.

let opened: OpenDatabase | null = null;
afterEach(() => {
  opened?.close();
  opened = null;
  cleanUpDatabases();
});

const OLD = 400;
const NEW = 10;
/** Refund n starts at START_MS + n * 10 s: these are 11 days after the old ones. */
const NEW_FROM = 100_001;

describe('a rebuild of the derived tables', () => {
  it('hands the planner only the final items within the delivery window of the newest', async () => {
    opened = openDatabase(join(makeTempDir(), 'interlock.sqlite'));
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    await journal.appendSealed(Array.from({ length: OLD }, (_, i) => refundChain(i + 1)).flat());
    const recent = Array.from({ length: NEW }, (_, i) => refundChain(NEW_FROM + i));
    await journal.appendSealed(recent.flat());
    const newestMs = Math.max(...recent.flat().map((entry) => entry.ts_ms));

    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => newestMs, log: { fatal: () => {}, error: () => {} }, derived: new SqliteDerivedTables(opened.db) });
    expect(await views.replayAtStart()).toBeNull();
    expect(views.held.outboxItems).toBeLessThanOrEqual(1);

    const config: NotificationsConfig = { ...NOTIFICATIONS, agents: { 'support-bot': NOTIFICATIONS.agents.bot! } };
    const owed: string[] = [];
    const outbox = new Outbox({
      journal: dryJournal(views.journal, owed),
      current: async () => (await views.current()).outbox,
      notifications: config,
      channels: new RecordingChannels(),
      nowMs: () => newestMs,
      wallMs: () => newestMs + 60_000,
      owner: 'rebuilt',
      log: { warn: () => {}, error: () => {} },
    });
    // Each item the pass is handed is read back from the tables, held until eviction next looks.
    await outbox.plan();
    // The recent requests' callbacks are owed; nothing else is.
    expect(owed).toHaveLength(NEW);
    // Only the window's final items were read back for the planner, as after a start on kept tables.
    expect(views.held.outboxItems).toBeLessThanOrEqual(NEW);
  });

  it('leaves nothing touched after the replay, and hands the planner the window\'s final items once', async () => {
    opened = openDatabase(join(makeTempDir(), 'interlock.sqlite'));
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    await journal.appendSealed(Array.from({ length: OLD }, (_, i) => refundChain(i + 1)).flat());
    await journal.appendSealed(Array.from({ length: NEW }, (_, i) => refundChain(NEW_FROM + i)).flat());
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} }, derived: new SqliteDerivedTables(opened.db) });
    expect(await views.replayAtStart()).toBeNull();
    const outbox = (await views.current()).outbox;
    expect(outbox.takeTouched()).toEqual([]);
    expect((await outbox.takeFinals(true)).sort()).toEqual(Array.from({ length: NEW }, (_, i) => refundEffectId(NEW_FROM + i)).sort());
    expect(await outbox.takeFinals(true)).toEqual([]);
  });
});
