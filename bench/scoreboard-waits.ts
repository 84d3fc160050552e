// What the scoreboard's time to decision costs read from its derived tables (server/scoreboard/
// totals.ts), apart from any fold: `npx tsx bench/scoreboard-waits.ts [waits] [batch]` counts
// `waits` waits (default 1,000,000: one a chain) into a fresh SQLite file, in batches of `batch`
// chains' waits (default 10,000), then times the median, p90 and max read from the counts (by
// hour, minute, second and value), checked
// against the same figures from every wait sorted in memory. Prints the figures as JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteDerivedTables } from '../db/derived-store.ts';
import { openDatabase } from '../db/open.ts';
import { decisionTimes } from '../server/scoreboard/board-sum.ts';
import { tableDecisionTimes, WAIT_LEVELS, waitChanges } from '../server/scoreboard/totals.ts';

const waits = Number(process.argv[2] ?? 1_000_000);
const batchSize = Number(process.argv[3] ?? 10_000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-scoreboard-waits-'));
const database = openDatabase(path.join(dir, 'journal.sqlite'));
const tables = new SqliteDerivedTables(database.db);

// Waits as approvers leave them: most within minutes to hours, a tail of days, every one to the ms.
let state = 42;
/** mulberry32: the same waits at every run. */
const random = () => {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
};
const waitOf = () => Math.floor(Math.exp(7 + random() * 12));

const all: number[] = [];
const started = performance.now();
let seq = 0;
for (let first = 0; first < waits; first += batchSize) {
  const moved = new Map<number, number>();
  for (let i = first; i < Math.min(waits, first + batchSize); i++) {
    const wait = waitOf();
    all.push(wait);
    moved.set(wait, (moved.get(wait) ?? 0) + 1);
  }
  const changes = await waitChanges(tables, moved);
  const to = { seq: seq + moved.size, globalHash: String(seq + moved.size).padStart(64, '0'), size: seq + moved.size, version: 'bench' };
  if (!(await tables.advance({ fromSeq: seq, to, changes }))) throw new Error('the cursor moved under the bench');
  seq = to.seq;
}
const writeMs = performance.now() - started;

const taken: number[] = [];
let times = await tableDecisionTimes(tables, waits);
for (let i = 0; i < 11; i++) {
  const at = performance.now();
  times = await tableDecisionTimes(tables, waits);
  taken.push(performance.now() - at);
}
const expected = decisionTimes(all.sort((a, b) => a - b));
if (JSON.stringify(times) !== JSON.stringify(expected)) throw new Error(`the tables' figures ${JSON.stringify(times)} are not the sorted waits' ${JSON.stringify(expected)}`);
const digests = await tables.digests();
const rowsOf = (view: string) => digests.find((digest) => digest.view === view)?.rows ?? 0;
const round = (value: number, digits = 2) => Number(value.toFixed(digits));
console.log(
  JSON.stringify({
    waits,
    batch: batchSize,
    rows_by_level: Object.fromEntries(WAIT_LEVELS.map(({ view }) => [view, rowsOf(view)])),
    write_s: round(writeMs / 1000),
    time_to_decision_ms: round(taken.sort((a, b) => a - b)[5]!),
    time_to_decision: times,
    db_mb: round(fs.statSync(path.join(dir, 'journal.sqlite')).size / 1_048_576, 1),
  }),
);
database.close();
fs.rmSync(dir, { recursive: true, force: true });
