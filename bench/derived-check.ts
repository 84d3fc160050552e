import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SqliteDerivedTables } from '../db/derived-store.ts';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import { RowsAgainstDigests } from '../server/integrity/derived-check-rows.ts';
import { type SliceRecord, WholeJournalPass, viewsPassParts, WholePassCounts } from '../server/integrity/whole-pass.ts';
import { Views } from '../server/views/views.ts';
import type { Entry } from '../shared/entries.ts';
import { refundChain } from '../test/support/ledger-journal.ts';

// The derived tables' check in the background pass, timed: `npx tsx bench/derived-check.ts
// [entries]` writes a journal of that many entries (committed refunds of four entries, each a
// ledger row), replays it into views writing their derived tables beside it as start-up does,
// then runs one pass as the server does (10 ms slices, three times as long asleep) and prints the
// figures of its last step: the tables recomputed at their newest mark, chain by chain, then every
// row of every table summed from a snapshot and held against its digest. A
// standalone measurement, for the operators' integrity page; not a stage of `npm run bench`.

const WRITE_CHUNK = 20_000;

async function main(): Promise<void> {
  const entries = Number(process.argv[2] ?? 100_000);
  if (!Number.isSafeInteger(entries) || entries < 10_000) throw new Error('give a number of entries, at least 10,000 (the first mark)');
  const dir = mkdtempSync(join(tmpdir(), 'interlock-derived-check-'));
  const opened = openDatabase(join(dir, 'journal.sqlite'));
  try {
    const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
    const tables = new SqliteDerivedTables(opened.db);
    let pending: Entry[] = [];
    for (let n = 1; n * 4 <= entries; n++) {
      pending.push(...refundChain(n));
      if (pending.length >= WRITE_CHUNK) {
        await journal.appendSealed(pending);
        pending = [];
      }
    }
    if (pending.length > 0) await journal.appendSealed(pending);
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => Date.now(), log: { fatal: (_f, message) => console.error(message), error: () => {} }, derived: tables });
    if ((await views.replayAtStart()) !== null) throw new Error('the generated journal failed its replay');
    const counts = new WholePassCounts();
    const slices: SliceRecord[] = [];
    let derivedStartMs = 0;
    const pass = new WholeJournalPass({
      ...viewsPassParts(views),
      checkpointProblem: async () => null,
      derivedCheck: () => {
        derivedStartMs = performance.now();
        return views.derivedCheck();
      },
      counts,
      periodMs: 3_600_000,
      log: { warn: (_fields, message) => console.error(message) },
      onSlice: (slice) => slices.push(slice),
    });
    const heapBefore = process.memoryUsage().heapUsed;
    let heapPeak = heapBefore;
    const sampler = setInterval(() => (heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed)), 20);
    if (!(await pass.run()) || counts.derivedChecks !== 1) throw new Error('the pass or the check did not hold');
    clearInterval(sampler);
    const seconds = (performance.now() - derivedStartMs) / 1000;
    const derived = slices.filter((s) => s.phase === 'derived');
    const read = derived.reduce((sum, s) => sum + s.units, 0);
    const rows = (await tables.digests()).reduce((sum, d) => sum + d.rows, 0);
    const workMs = derived.reduce((sum, s) => sum + s.workMs, 0);
    const sorted = derived.map((s) => s.workMs).sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]?.toFixed(2);
    const mark = (await tables.marks()).at(-1);
    console.log(`mark: seq ${mark?.seq}, ledger rows ${mark?.digests.find((d) => d.view === 'ledger')?.rows}`);
    console.log(`tables: ${rows} rows in ${(await tables.digests()).length} views`);
    console.log(`check: ${seconds.toFixed(1)} s, sleeps included; work ${(workMs / 1000).toFixed(2)} s, ${read} entries and rows read, ${Math.round(read / (workMs / 1000))} a second of work`);
    console.log(`slices: ${derived.length}, work per slice median ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`);
    // The sum of the rows alone, once more, all at once: its share of the work above.
    const rowsStartMs = performance.now();
    const alone = new RowsAgainstDigests(tables);
    while (!alone.finished) await alone.step(() => true);
    if (alone.disagreement() !== null) throw new Error('the rows do not sum to their digests');
    console.log(`rows summed alone: ${((performance.now() - rowsStartMs) / 1000).toFixed(2)} s for ${rows} rows`);
    console.log(`heap: ${(heapBefore / 2 ** 20).toFixed(0)} MiB before the pass, peak ${(heapPeak / 2 ** 20).toFixed(0)} MiB during it (the whole pass, uncollected garbage included)`);
  } finally {
    opened.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
