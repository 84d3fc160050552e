// A gate process that dies at a send, for the group-commit crash test. Usage:
//   node --import tsx test/support/gate-send-kill-child.ts <dbfile> <submitters> <sendsBeforeKill>
// <submitters> loops push routine effects through the Gate on a SqliteJournal at <dbfile>, so the
// journal's writes are group-committed. The target counts sends; at send number <sendsBeforeKill>
// it writes the effect id of that send to stdout (synchronously) and SIGKILLs its own process,
// so whatever the Gate had not made durable before starting that send is lost with it.
import fs from 'node:fs';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import type { JsonObject } from '../../shared/json.ts';
import { Gate } from '../../server/gate/gate.ts';
import { MemoryLeases } from '../../server/gate/leases.ts';
import { MemoryPayments } from '../../server/targets/memory-payments.ts';

const [file, submittersArg, killAtArg] = process.argv.slice(2);
const submitters = Number(submittersArg);
const killAt = Number(killAtArg);
if (file === undefined || !(submitters > 0) || !(killAt > 0)) throw new Error('usage: <dbfile> <submitters> <sendsBeforeKill>');

class SendKillingPayments extends MemoryPayments {
  sends = 0;

  override async apply(effectId: string, effect: JsonObject): Promise<JsonObject> {
    this.sends += 1;
    // Every send so far is reported as it starts; the last one is the send the process dies in.
    fs.writeSync(1, `${effectId}\n`);
    if (this.sends === killAt) process.kill(process.pid, 'SIGKILL');
    return super.apply(effectId, effect);
  }
}

const opened = openDatabase(file);
const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
const target = new SendKillingPayments(1);
const leases = new MemoryLeases();
leases.grant('L-crash');
const gate = new Gate({ journal, target, leases, wallClockMs: () => Date.now() });

let next = 0;
async function submitter(): Promise<void> {
  for (;;) {
    const order = `o-${process.pid}-${next++}`;
    target.addOrder(order, 10_000);
    await gate.submit({ agent: 'crash', lease: 'L-crash', requestKey: order, premises: target.capture(order), effect: { order, amount: 2_000 } });
  }
}
await Promise.all(Array.from({ length: submitters }, submitter));
