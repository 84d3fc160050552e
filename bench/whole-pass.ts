import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sealNext } from '../db/journal-rules.ts';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import { type SliceRecord, WholeJournalPass, viewsPassParts, WholePassCounts } from '../server/integrity/whole-pass.ts';
import { Views } from '../server/views/views.ts';
import type { Entry, EntryKind } from '../shared/entries.ts';
import { effectIdOf, fields } from '../test/support/db-journals.ts';

// The background pass over the whole journal, timed: `npx tsx bench/whole-pass.ts [entries]`
// writes a journal of that many entries (chains of four: PROPOSED, AUTHORIZED, DISPATCHED,
// COMMITTED), replays it into views as start-up does, then runs one pass as the server does (10 ms
// slices, three times as long asleep) and prints its figures. A standalone measurement, for the
// operators' integrity page; not a stage of `npm run bench`.

const KINDS: readonly EntryKind[] = ['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'];
const WRITE_CHUNK = 20_000;

async function main(): Promise<void> {
  const entries = Number(process.argv[2] ?? 100_000);
  if (!Number.isSafeInteger(entries) || entries < KINDS.length) throw new Error('give a number of entries, at least 4');
  const dir = mkdtempSync(join(tmpdir(), 'interlock-whole-pass-'));
  const opened = openDatabase(join(dir, 'journal.sqlite'));
  try {
    const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
    let pending: Entry[] = [];
    for (let chain = 1; chain * KINDS.length <= entries; chain++) {
      let last: Entry | undefined;
      for (const kind of KINDS) {
        last = sealNext(kind, effectIdOf(chain), { ...fields(kind) }, last, 1_700_000_000_000 + chain);
        pending.push(last);
      }
      if (pending.length >= WRITE_CHUNK) {
        await journal.appendSealed(pending);
        pending = [];
      }
    }
    if (pending.length > 0) await journal.appendSealed(pending);
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => Date.now(), log: { fatal: () => {}, error: () => {} } });
    if ((await views.replayAtStart()) !== null) throw new Error('the generated journal failed its replay');
    const counts = new WholePassCounts();
    const slices: SliceRecord[] = [];
    const pass = new WholeJournalPass({
      ...viewsPassParts(views),
      checkpointProblem: async () => null,
      counts,
      periodMs: 3_600_000,
      log: { warn: (_fields, message) => console.error(message) },
      onSlice: (slice) => slices.push(slice),
    });
    const startMs = performance.now();
    if (!(await pass.run())) throw new Error('the pass did not hold');
    const seconds = (performance.now() - startMs) / 1000;
    const workMs = slices.reduce((sum, s) => sum + s.workMs, 0);
    const sorted = slices.map((s) => s.workMs).sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]?.toFixed(2);
    for (const s of slices.filter((s) => s.workMs > 10)) console.log(`slow slice: ${s.phase} ${s.units} units ${s.workMs.toFixed(1)} ms`);
    console.log(`entries: ${counts.entries}`);
    console.log(`pass: ${seconds.toFixed(1)} s, ${Math.round(counts.entries / seconds)} entries/s, sleeps included`);
    console.log(`work: ${(workMs / 1000).toFixed(1)} s (${((workMs / 1000 / seconds) * 100).toFixed(0)}% of one core), ${Math.round(counts.entries / (workMs / 1000))} entries/s of work`);
    console.log(`slices: ${slices.length}, work per slice median ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`);
  } finally {
    opened.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
