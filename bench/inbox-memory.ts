// What the inbox holds in memory once it is kept in its derived table (server/inbox/view.ts),
// against every chain's summary held as the in-memory fold does (server/inbox/projection.ts):
// `npx tsx --expose-gc bench/inbox-memory.ts [refunds]` writes `refunds` refunds sent and
// confirmed (default 20,000, 5 entries each) and 100 sent and not yet confirmed to a fresh SQLite
// file, starts the views on it, starts them again on the same file, and prints the figures as JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteDerivedTables } from '../db/derived-store.ts';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import { InboxProjection } from '../server/inbox/projection.ts';
import { Views } from '../server/views/views.ts';
import { refundChain } from '../test/support/ledger-journal.ts';

const refunds = Number(process.argv[2] ?? 20_000);
const OPEN = 100;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc: npx tsx --expose-gc bench/inbox-memory.ts');
const heapMiB = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-inbox-memory-'));
const database = openDatabase(path.join(dir, 'interlock.sqlite'));
try {
  const journal = new SqliteJournal({ db: database.db, wallClockMs: () => 1_796_198_700_000 });
  const tables = new SqliteDerivedTables(database.db);
  for (let first = 1; first <= refunds + OPEN; first += 1_000) {
    const last = Math.min(first + 999, refunds + OPEN);
    await journal.appendSealed(Array.from({ length: last - first + 1 }, (_, i) => refundChain(first + i, first + i <= refunds ? ['succeeded'] : [])).flat());
  }
  const log = { fatal: () => {}, error: () => {} };
  const start = async () => {
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log, derived: tables });
    const began = performance.now();
    if ((await views.replayAtStart()) !== null) throw new Error('the journal did not hold');
    await views.current();
    const { inbox, seq } = await views.current();
    return { views, inbox, seq, ms: performance.now() - began };
  };
  const base = heapMiB();
  const first = await start();
  const tableHeld = heapMiB() - base;
  const again = await start();
  const entries = first.seq;
  // The whole fold, as every chain's summary was held before.
  const whole = new InboxProjection('inbox');
  const before = heapMiB();
  for (const { entry } of await journal.scan(0, entries)) whole.fold(entry);
  const wholeHeld = heapMiB() - before;
  console.log(
    JSON.stringify(
      {
        refunds_closed: refunds,
        refunds_open: OPEN,
        entries,
        held_chains_table: again.inbox.heldChains,
        held_chains_whole_fold: whole.chains.size,
        heap_mib_views_on_table: Number(tableHeld.toFixed(1)),
        heap_mib_whole_fold_alone: Number(wholeHeld.toFixed(1)),
        bytes_per_closed_chain_whole_fold: Math.round((wholeHeld * 2 ** 20) / whole.chains.size),
        first_start_ms: Math.round(first.ms),
        restart_ms: Math.round(again.ms),
      },
      null,
      2,
    ),
  );
} finally {
  database.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
