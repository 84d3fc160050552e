// What the derived tables cost on SQLite (db/derived-store.ts), apart from any view's fold:
// `npx tsx bench/derived.ts [rows] [batch]` writes `rows` ledger-like rows (default 100,000) in
// batches of `batch` (default 1,000) to a fresh file, replaces each once, then times pages of 50
// from the start and from the middle, either way, and the open rows (1 in 100). Prints the figures as JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteDerivedTables } from '../db/derived-store.ts';
import { openDatabase } from '../db/open.ts';
import type { DerivedChange } from '../db/port/derived.ts';

const rows = Number(process.argv[2] ?? 100_000);
const batchSize = Number(process.argv[3] ?? 1_000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-derived-'));
const file = path.join(dir, 'journal.sqlite');
const database = openDatabase(file);
const tables = new SqliteDerivedTables(database.db);

const keyOf = (n: number) => n.toString(16).padStart(12, '0');
/** A row about the size of a ledger line: an effect's amounts, parties, status and times. */
function change(n: number, pass: number): DerivedChange {
  const key = keyOf(n);
  const body = { effect_id: key, amount: 1_000 + (n % 9_000), currency: 'usd', payment_intent: `pi_${key}${key}`, agent: `agent-${n % 7}`, status: pass === 0 ? 'proposed' : 'committed', approved_by: pass === 0 ? null : 'ana', at_ms: 1_700_000_000_000 + n, refund: pass === 0 ? null : `re_${key}` };
  return { view: 'ledger', key, row: { key, order: n, open: n % (pass === 0 ? 50 : 100) === 0, body } };
}

async function pass(number: number): Promise<number> {
  const started = performance.now();
  let seq = (await tables.cursor())?.seq ?? 0;
  for (let first = 1; first <= rows; first += batchSize) {
    const changes = Array.from({ length: Math.min(batchSize, rows - first + 1) }, (_, i) => change(first + i, number));
    const to = { seq: seq + changes.length, globalHash: String(seq + changes.length).padStart(64, '0'), size: seq + changes.length, version: 'bench' };
    if (!(await tables.advance({ fromSeq: seq, to, changes }))) throw new Error('the cursor moved under the bench');
    seq = to.seq;
  }
  return performance.now() - started;
}

/** The median of `times` runs of `fn`, in ms. */
async function medianMs(fn: () => Promise<unknown>, times = 21): Promise<number> {
  const taken: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await fn();
    taken.push(performance.now() - started);
  }
  return taken.sort((a, b) => a - b)[Math.floor(times / 2)]!;
}

const insertMs = await pass(0);
const replaceMs = await pass(1);
const middle = { order: Math.floor(rows / 2), key: keyOf(Math.floor(rows / 2)) };
const round = (value: number, digits = 2) => Number(value.toFixed(digits));
const figures = {
  rows,
  batch: batchSize,
  insert_s: round(insertMs / 1000),
  insert_us_per_row: round((insertMs * 1000) / rows, 1),
  replace_s: round(replaceMs / 1000),
  replace_us_per_row: round((replaceMs * 1000) / rows, 1),
  file_bytes_per_row: Math.round(fs.statSync(file).size / rows),
  page50_first_desc_ms: round(await medianMs(() => tables.list('ledger', { direction: 'desc', limit: 50 })), 3),
  page50_middle_asc_ms: round(await medianMs(() => tables.list('ledger', { direction: 'asc', limit: 50, after: middle })), 3),
  page50_middle_desc_ms: round(await medianMs(() => tables.list('ledger', { direction: 'desc', limit: 50, after: middle })), 3),
  open_rows_ms: round(await medianMs(() => tables.list('ledger', { direction: 'asc', limit: rows, open: true })), 3),
  digests_ms: round(await medianMs(() => tables.digests()), 3),
};
database.close();
fs.rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
