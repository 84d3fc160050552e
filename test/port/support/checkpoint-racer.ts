// One process adding checkpoints to a journal file, for test/port/checkpoints-processes.test.ts.
// Usage: node --import tsx test/port/support/checkpoint-racer.ts <file> <first size> <step> <count> [planted]
// Opens the file, says {"step":"ready"}, waits for "go" on stdin, adds `count` checkpoints of sizes
// first, first + step, … as fast as it can, and says {"step":"done","kept":n}. With `planted`, it
// adds them as a bad store would: the newest read, then (a millisecond on) the row written, outside
// one transaction.
import readline from 'node:readline';
import { SqliteCheckpoints } from '../../../db/journal-checkpoints.ts';
import { openDatabase } from '../../../db/open.ts';

const [file, first, step, count, planted] = process.argv.slice(2);
if (file === undefined || first === undefined || step === undefined || count === undefined) throw new Error('usage: checkpoint-racer <file> <first> <step> <count>');
const database = openDatabase(file);
const store = new SqliteCheckpoints(database.db);
const insert = database.sqlite.prepare('INSERT INTO journal_checkpoints (epoch, size, head, note, signed_at_ms) VALUES (?, ?, ?, ?, ?)');

async function add(size: number): Promise<boolean> {
  const row = { epoch: 0, size, head: String(size).padStart(64, '0'), note: `note ${size}`, signedAtMs: Date.now() };
  if (planted !== 'planted') {
    // A writer that finds the file busy past its timeout asks again, as a server's next checkpoint would.
    for (let tries = 1; ; tries++) {
      try {
        return await store.add(row);
      } catch (error) {
        if ((error as { code?: string }).code !== 'store_busy' || tries >= 5) throw error;
      }
    }
  }
  const newest = await store.latest();
  if (newest !== null && newest.size >= size) return false;
  // The way back from the database, as over a network.
  await new Promise((resolve) => setTimeout(resolve, 1));
  insert.run(row.epoch, row.size, row.head, row.note, row.signedAtMs);
  return true;
}
const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
say({ step: 'ready' });
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line !== 'go') continue;
  let kept = 0;
  for (let i = 0; i < Number(count); i++) {
    if (await add(Number(first) + i * Number(step))) kept += 1;
  }
  say({ step: 'done', kept });
  break;
}
lines.close();
database.close();
