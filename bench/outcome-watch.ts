// What the refund outcome lines read to begin (server/metrics/refund-outcomes.ts):
// `npx tsx bench/outcome-watch.ts [refunds]` writes `refunds` refunds sent and confirmed (default
// 20,000, 5 entries each) and 100 sent and not yet answered to a fresh SQLite file, starts the
// views on it, then times the watch's start and counts the derived rows it reads, and prints the
// lines the commit and confirmation of each open refund then give, as JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DerivedTables } from '../db/port/derived.ts';
import { SqliteDerivedTables } from '../db/derived-store.ts';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import { watchRefundOutcomes } from '../server/metrics/refund-outcomes.ts';
import { Views } from '../server/views/views.ts';
import { refundChain } from '../test/support/ledger-journal.ts';

const refunds = Number(process.argv[2] ?? 20_000);
const OPEN = 100;

/** The tables, counting the rows each read answers. */
function counting(inner: DerivedTables): { tables: DerivedTables; rowsRead: () => number } {
  let rows = 0;
  const tables: DerivedTables = {
    cursor: () => inner.cursor(),
    advance: (batch) => inner.advance(batch),
    reset: (version) => inner.reset(version),
    digests: () => inner.digests(),
    marks: () => inner.marks(),
    newestMark: () => inner.newestMark(),
    snapshot: () => inner.snapshot(),
    async get(view, key) {
      const row = await inner.get(view, key);
      if (row !== null) rows += 1;
      return row;
    },
    async list(view, options) {
      const found = await inner.list(view, options);
      rows += found.length;
      return found;
    },
  };
  return { tables, rowsRead: () => rows };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-outcome-watch-'));
const database = openDatabase(path.join(dir, 'interlock.sqlite'));
try {
  const journal = new SqliteJournal({ db: database.db, wallClockMs: () => 1_796_198_700_000 });
  const open = Array.from({ length: OPEN }, (_, i) => refundChain(refunds + 1 + i, ['succeeded']));
  for (let first = 1; first <= refunds + OPEN; first += 1_000) {
    const last = Math.min(first + 999, refunds + OPEN);
    // The open ones sent and not yet answered: their commit and confirmation come after the watch began.
    await journal.appendSealed(Array.from({ length: last - first + 1 }, (_, i) => (first + i <= refunds ? refundChain(first + i, ['succeeded']) : open[first + i - refunds - 1]!.slice(0, 3))).flat());
  }
  const { tables, rowsRead } = counting(new SqliteDerivedTables(database.db));
  const log = { fatal: () => {}, error: () => {} };
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log, derived: tables });
  if ((await views.replayAtStart()) !== null) throw new Error('the journal did not hold');
  await views.current();
  const readBefore = rowsRead();
  const lines: string[] = [];
  const began = performance.now();
  const stop = await watchRefundOutcomes(views, { info: (_fields, message) => lines.push(message) });
  const watchMs = performance.now() - began;
  const watchRows = rowsRead() - readBefore;
  await journal.appendSealed(open.flatMap((chain) => chain.slice(3)));
  await views.current();
  stop();
  console.log(JSON.stringify({ refunds_closed: refunds, refunds_open: OPEN, watch_start_ms: Math.round(watchMs), watch_start_rows_read: watchRows, lines_after_commits: lines.length }));
} finally {
  database.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
