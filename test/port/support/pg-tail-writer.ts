// One slow writer process for the tail test (test/port/pg-journal-tail.test.ts). Usage:
//   node --import tsx pg-tail-writer.ts <postgresql-url> <writer> <lanes> <appends per lane> <hold ms max> <slow|planted>
// It connects its own pool, says {"step":"ready"}, waits for "go" on stdin, then appends from
// `lanes` concurrent callers (group-committed together), each row held under the lock a random
// while, and ends with {"step":"done","hashes":[...]}: every entry it wrote.
import readline from 'node:readline';
import { openPgPool } from '../../../db/pg/pool.ts';
import { effectIdOf, fields } from '../../support/db-journals.ts';
import { PgSeqFromSequence, SlowPgJournal } from '../planted-pg-journals.ts';

const [url, writerArg, lanesArg, appendsArg, holdArg, store] = process.argv.slice(2);
if (url === undefined || store === undefined) throw new Error('usage: <url> <writer> <lanes> <appends> <holdMsMax> <slow|planted>');
const [writer, lanes, appends, holdMsMax] = [writerArg, lanesArg, appendsArg, holdArg].map(Number) as [number, number, number, number];

const pool = openPgPool({ url, max: 3, applicationName: `tail-writer-${writer}` });
(await pool.connect()).release();
const Kind = store === 'planted' ? PgSeqFromSequence : SlowPgJournal;
const journal = new Kind({ pool, wallClockMs: () => Date.now(), holdMsMax });
process.stdout.write(`${JSON.stringify({ step: 'ready' })}\n`);
const words = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
if ((await words.next()).value !== 'go') throw new Error('expected "go" from the parent');

const hashes: string[] = [];
await Promise.all(
  Array.from({ length: lanes }, async (_, lane) => {
    for (let n = 0; n < appends; n++) {
      const entry = await journal.append('PROPOSED', effectIdOf(writer * 10_000 + lane * 1_000 + n + 1), fields('PROPOSED', { writer, lane, n }));
      hashes.push(entry.hash);
    }
  }),
);
await pool.end();
process.stdout.write(`${JSON.stringify({ step: 'done', hashes })}\n`);
process.exit(0);
