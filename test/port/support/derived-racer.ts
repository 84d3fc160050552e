// One process advancing the derived tables of a journal file, for test/port/derived-processes.test.ts.
// Usage: node --import tsx test/port/support/derived-racer.ts <file> <name> <goal> [planted]
// Opens the file, says {"step":"ready"}, waits for "go" on stdin, then until the cursor reaches
// `goal`: reads the cursor and the running count, and advances one seq adding a row of its own and
// the count plus one, from that cursor. Says {"step":"done","won":n}, n the batches it was told
// applied. With `planted`, it advances as a store that reads the cursor outside its write does.
import readline from 'node:readline';
import { SqliteDerivedTables } from '../../../db/derived-store.ts';
import { openDatabase } from '../../../db/open.ts';
import type { DerivedChange } from '../../../db/port/derived.ts';
import { SqliteCheckingOutside } from '../planted-derived.ts';

const [file, name, goal, planted] = process.argv.slice(2);
if (file === undefined || name === undefined || goal === undefined) throw new Error('usage: derived-racer <file> <name> <goal> [planted]');
const database = openDatabase(file);
const tables = planted === 'planted' ? new SqliteCheckingOutside(database.db) : new SqliteDerivedTables(database.db);

const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
say({ step: 'ready' });
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line !== 'go') continue;
  let won = 0;
  for (;;) {
    const seq = (await tables.cursor())?.seq ?? 0;
    if (seq >= Number(goal)) break;
    const count = ((await tables.get('counts', 'total'))?.body.n as number | undefined) ?? 0;
    const to = { seq: seq + 1, globalHash: String(seq + 1).padStart(64, '0'), size: seq + 1, version: 'v1' };
    const changes: DerivedChange[] = [
      { view: 'ledger', key: `k${String(seq + 1).padStart(6, '0')}`, row: { key: `k${String(seq + 1).padStart(6, '0')}`, order: seq + 1, open: false, body: { by: name } } },
      { view: 'counts', key: 'total', row: { key: 'total', order: 0, open: false, body: { n: count + 1 } } },
    ];
    if (await tables.advance({ fromSeq: seq, to, changes })) won += 1;
  }
  say({ step: 'done', won });
  break;
}
lines.close();
database.close();
