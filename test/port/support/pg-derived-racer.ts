// One process advancing the derived tables of a PostgreSQL database, for
// test/port/pg-derived-processes.test.ts (as derived-racer.ts is on SQLite).
// Usage: node --import tsx test/port/support/pg-derived-racer.ts <postgresql-url> <name> <goal> [planted]
// Opens a pool of its own, says {"step":"ready"}, waits for "go" on stdin, then until the cursor
// reaches `goal`: reads the cursor and the running count, and advances one seq adding a row of its
// own and the count plus one, from that cursor. Says {"step":"done","won":n}, n the batches it was
// told applied. With `planted`, it advances as a store that reads the cursor outside its write does.
import readline from 'node:readline';
import { PgDerivedTables } from '../../../db/pg/derived.ts';
import { openPgPool } from '../../../db/pg/pool.ts';
import type { DerivedChange } from '../../../db/port/derived.ts';
import { PgCheckingOutside } from '../planted-pg-derived.ts';

const [url, name, goal, planted] = process.argv.slice(2);
if (url === undefined || name === undefined || goal === undefined) throw new Error('usage: pg-derived-racer <postgresql-url> <name> <goal> [planted]');
const pool = openPgPool({ url, max: 2, applicationName: `derived-racer-${name}` });
const tables = planted === 'planted' ? new PgCheckingOutside({ pool, pauseMs: 1 }) : new PgDerivedTables({ pool });

const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
// A first statement before "ready": every racer starts the race connected.
await tables.cursor();
say({ step: 'ready' });
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line !== 'go') continue;
  let won = 0;
  for (;;) {
    const seq = (await tables.cursor())?.seq ?? 0;
    if (seq >= Number(goal)) break;
    const count = ((await tables.get('counts', 'total'))?.body.n as number | undefined) ?? 0;
    const key = `k${String(seq + 1).padStart(6, '0')}`;
    const to = { seq: seq + 1, globalHash: String(seq + 1).padStart(64, '0'), size: seq + 1, version: 'v1' };
    const changes: DerivedChange[] = [
      { view: 'ledger', key, row: { key, order: seq + 1, open: false, body: { by: name } } },
      { view: 'counts', key: 'total', row: { key: 'total', order: 0, open: false, body: { n: count + 1 } } },
    ];
    if (await tables.advance({ fromSeq: seq, to, changes })) won += 1;
  }
  say({ step: 'done', won });
  break;
}
lines.close();
await pool.end();
