// A process that keeps many journal writes in flight, for the group-commit crash test and the
// journal benchmark. Usage:
//   node --import tsx test/support/bench-append-child.ts <dbfile> <inFlight> <writesMax> <effects> [quiet]
// It opens <dbfile>, keeps <inFlight> writes outstanding (appends, and appendIf with a check on
// the chain) over <effects> chains, and prints the hash of every entry on its own line the moment
// the write's promise resolves: a line on stdout is a write its caller was told is durable. It
// stops after <writesMax> writes with one JSON line {"done":true,...}; with `quiet`, only that line.
import { performance } from 'node:perf_hooks';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import type { Entry, EntryKind } from '../../shared/entries.ts';
import { effectIdOf, fields } from './db-journals.ts';

const [file, inFlightArg, writesMaxArg, effectsArg, mode] = process.argv.slice(2);
const inFlight = Number(inFlightArg);
const writesMax = Number(writesMaxArg);
const effects = Number(effectsArg);
if (file === undefined || !(inFlight > 0) || !(writesMax > 0) || !(effects > 0)) {
  throw new Error('usage: <dbfile> <inFlight> <writesMax> <effects> [quiet]');
}
const quiet = mode === 'quiet';

const opened = openDatabase(file);
const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
const kinds: EntryKind[] = ['PROPOSED', 'AUTHORIZED', 'ESCALATED', 'DECIDED', 'CONFIRMED'];

// A deterministic spread over chains and kinds, so runs are comparable.
let state = 0x9e3779b9;
function nextRandom(): number {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return (state >>> 0) / 0x1_0000_0000;
}

function acknowledge(entry: Entry | null): void {
  if (entry !== null && !quiet) process.stdout.write(`${entry.hash}\n`);
}

async function write(n: number): Promise<void> {
  const effectId = effectIdOf(1 + Math.floor(nextRandom() * effects));
  // Well-formed entries carrying the load's own marks (a shape allows extra fields).
  const marks = { n, pid: process.pid, note: 'group commit load' };
  if (n % 10 === 0) {
    // A conditional write whose check reads the chain, as the gate's DISPATCHED does.
    const result = await journal.appendIf('DECIDED', effectId, (chain) => (chain.length % 7 === 6 ? 'busy' : null), fields('DECIDED', marks));
    acknowledge(result.entry);
    return;
  }
  const kind = kinds[n % kinds.length]!;
  acknowledge(await journal.append(kind, effectId, fields(kind, marks)));
}

const startedMs = performance.now();
let started = 0;
async function lane(): Promise<void> {
  while (started < writesMax) {
    started += 1;
    await write(started);
  }
}
await Promise.all(Array.from({ length: inFlight }, lane));
const elapsedMs = performance.now() - startedMs;
process.stdout.write(`${JSON.stringify({ done: true, writes: started, ms: elapsedMs, stats: journal.commitStats })}\n`);
opened.close();
