// One delivery process for test/confirm/concurrency.test.ts. Usage:
//   node --import tsx confirm-race-child.ts <dbfile> <secret>
// It opens the database, says {"step":"ready"}, then reads one JSON line {payload (base64), header}
// from the parent, verifies and records that delivery, says {"step":"done","result":...} and exits.
// The parent writes the line to every racer at once, so all of them record the same event together.
import readline from 'node:readline';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { confirmEvent } from '../../server/confirm/record.ts';
import { verifyWebhook } from '../../server/confirm/signature.ts';

const [file, secret] = process.argv.slice(2);
if (file === undefined || secret === undefined) throw new Error('usage: <dbfile> <secret>');
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

function say(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

const opened = openDatabase(file);
say({ step: 'ready' });
const next = await lines.next();
if (next.done) throw new Error('the parent sent no delivery');
const { payload, header } = JSON.parse(next.value) as { payload: string; header: string };
const event = verifyWebhook(Buffer.from(payload, 'base64'), header, [secret], Date.now());
const result = await confirmEvent(new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() }), event);
opened.close();
say({ step: 'done', result });
process.exit(0);
