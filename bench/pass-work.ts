// The background pass's work over a journal, phase by phase, with no sleeps between its slices:
// `npx tsx bench/pass-work.ts <journal.sqlite>` opens the journal (a copy: its first open builds
// the derived tables), starts its views as a server does, runs one pass as the server runs it but
// without the sleeps, and prints each phase's slices, milliseconds of work and entries or rows
// read. A standalone measurement, for the operators' integrity page; not a stage of `npm run bench`.
// With `--from-checkpoint`, the views start where a server's start them: at the newest checkpoint
// signed with the receipt key beside the file (a server's data folder, copied), not from seq 0.
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { SqliteDerivedTables } from '../db/derived-store.ts';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import { openStorage } from '../db/sqlite-storage.ts';
import { type SliceRecord, WholeJournalPass, viewsPassParts, WholePassCounts } from '../server/integrity/whole-pass.ts';
import { resolveSigningKey } from '../server/receipts/key-file.ts';
import { Views } from '../server/views/views.ts';
const file = process.argv[2];
if (file === undefined) throw new Error('give the journal file: a copy, its first open builds its derived tables');
const fromCheckpoint = process.argv.includes('--from-checkpoint');
const opened = openDatabase(file);
const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
const tables = new SqliteDerivedTables(opened.db);
const storage = fromCheckpoint ? await openStorage({ file }) : null;
const key = fromCheckpoint ? resolveSigningKey({ dataDir: path.dirname(path.resolve(file)), receiptKeyPath: null, credentialsDirectory: null }, { readOnly: true }).key : null;
const start = storage !== null && key !== null ? { startFrom: 'checkpoint' as const, checkpoints: { store: storage.checkpoints, key } } : {};
const views = new Views({ journal, inboxName: 'inbox', nowMs: () => Date.now(), log: { fatal: (_f, m) => console.error(m), error: () => {} }, derived: tables, ...start });
let t = performance.now();
if ((await views.replayAtStart()) !== null) throw new Error('the journal failed its replay');
console.log(`views started in ${((performance.now() - t) / 1000).toFixed(2)} s`);
const counts = new WholePassCounts();
const slices: SliceRecord[] = [];
const pass = new WholeJournalPass({ ...viewsPassParts(views), checkpointProblem: async () => null, derivedCheck: () => views.derivedCheck(), counts, periodMs: 3_600_000, log: { warn: (_f, m) => console.error(m) }, onSlice: (s) => slices.push(s), sleep: async () => {} });
t = performance.now();
console.log('pass held:', await pass.run(), 'in', ((performance.now() - t) / 1000).toFixed(1), 's');
const by: Record<string, { n: number; ms: number; units: number }> = {};
for (const s of slices) {
  by[s.phase] ??= { n: 0, ms: 0, units: 0 };
  const b = by[s.phase]!;
  b.n++;
  b.ms += s.workMs;
  b.units += s.units;
}
for (const [phase, b] of Object.entries(by)) console.log(`${phase}: ${b.n} slices, ${(b.ms / 1000).toFixed(2)} s of work, ${b.units} entries or rows`);
opened.close();
await storage?.close();
