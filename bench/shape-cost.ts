// `tsx bench/shape-cost.ts <journal.sqlite>`: what share of reading a journal the entry shape
// checks take (server/journal/shapes.ts), on a copy of a journal made by `bench/journals.ts`.
// Every row read is parsed, hashed and shape-checked; the checks are then timed again alone over
// the same entries. The bound is 10% of rebuild_s_1m, of which the read is a part.
import { performance } from 'node:perf_hooks';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import type { Entry } from '../shared/entries.ts';
import { entryShapeProblem } from '../server/journal/shapes.ts';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: tsx bench/shape-cost.ts <journal.sqlite>');
const opened = openDatabase(file);
const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
for (let rep = 0; rep < 3; rep++) {
  let startMs = performance.now();
  const entries: Entry[] = [];
  for (let after = 0; ; ) {
    const page = await journal.scan(after, 10_000);
    if (page.length === 0) break;
    for (const { entry } of page) entries.push(entry);
    after = page.at(-1)!.seq;
  }
  const readMs = performance.now() - startMs;
  startMs = performance.now();
  let malformed = 0;
  for (const entry of entries) if (entryShapeProblem(entry) !== null) malformed += 1;
  const shapeMs = performance.now() - startMs;
  console.log(`${entries.length} entries: read ${readMs.toFixed(0)} ms, shape checks ${shapeMs.toFixed(0)} ms (${((100 * shapeMs) / readMs).toFixed(1)}% of the read), malformed ${malformed}`);
}
opened.close();
