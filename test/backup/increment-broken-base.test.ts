import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpoints } from '../../db/journal-checkpoints.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { type OpenDatabase, openDatabase } from '../../db/open.ts';
import { takeBackup } from '../../server/backup/backup.ts';
import { readChain } from '../../server/backup/chain.ts';
import { takeIncrement } from '../../server/backup/increment.ts';
import { proposed } from '../adversarial/outbox-harness.ts';

// infra/interlock-backup.service takes each hour an increment since the day's T00 backup, itself
// an increment since the month's full one, and takes a full backup instead only when the
// increment is refused. An increment since a base whose own chain no longer restores (the month's
// full backup changed on disk) restores nothing: taking it must be refused, not answered as done.

const dir = mkdtempSync(join(tmpdir(), 'interlock-broken-base-'));
let source: OpenDatabase;
const env = { dbPath: join(dir, 'data', 'interlock.sqlite'), dataDir: dir, configPath: join(dir, 'none.yaml'), receiptKeyPath: null, credentialsDirectory: null };

async function append(from: number, count: number): Promise<void> {
  const journal = new SqliteJournal({ db: source.db, wallClockMs: Date.now });
  for (let i = from; i < from + count; i++) await journal.append('PROPOSED', i.toString(16).padStart(12, '0'), proposed(`r-${i}`, 1_000));
}

beforeAll(async () => {
  source = openDatabase(env.dbPath);
  await new SqliteCheckpoints(source.db).ensureJournalId();
  await append(0, 3);
  await takeBackup({ env, dir: join(dir, '2026-12-01T0001'), withKey: false });
  await append(3, 2);
  await takeIncrement({ env, dir: join(dir, '2026-12-05T0001'), since: join(dir, '2026-12-01T0001'), withKey: false });
  await append(5, 2);
});

afterAll(() => {
  source.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('an increment since an increment whose chain no longer restores', () => {
  it('is refused, so the unit takes a full backup instead', async () => {
    // The month's full backup changed on disk after the day's increment was taken.
    appendFileSync(join(dir, '2026-12-01T0001', 'interlock.sqlite'), 'x');
    const taken = takeIncrement({ env, dir: join(dir, '2026-12-05T0101'), since: join(dir, '2026-12-05T0001'), withKey: false }).then(
      () => 'taken',
      () => 'refused',
    );
    const outcome = await taken;
    // Whichever it answered, the increment it may have written restores nothing.
    const restorable = (() => {
      try {
        readChain(join(dir, '2026-12-05T0101'));
        return true;
      } catch {
        return false;
      }
    })();
    expect({ outcome, restorable }).toEqual({ outcome: 'refused', restorable: false });
  });
});
