import { sign } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { epochSigningInput } from '../../server/integrity/epoch.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { runVerifyCli } from '../../server/receipts/verify-cli.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import { checkpointKey as key, startChecked, startRefusal } from '../support/checkpoints.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';
import { tamper, writeJournal } from '../support/tamper.ts';

afterEach(cleanUpDatabases);

// `npm run verify -- --journal` runs start-up's checks offline: whatever start-up refuses from the
// journal file alone (its own checkpoints, its id, its epochs), the offline check refuses too,
// with the same code, so it can locate the damage start-up reported.

function publicKeyFile(): string {
  const file = path.join(makeTempDir(), 'receipt-signing-key.pub.pem');
  fs.writeFileSync(file, key.publicKeyPem);
  return file;
}

async function verifyOffline(file: string, withKey: boolean): Promise<{ exitCode: number; problem: { code: string; message: string } | null }> {
  const outcome = await runVerifyCli(['--journal', file, ...(withKey ? ['--key', publicKeyFile()] : [])]);
  const report = JSON.parse(outcome.stdout) as { problem: { code: string; message: string } | null };
  return { exitCode: outcome.exitCode, problem: report.problem };
}

/** A journal of 12 entries, started once so that its store holds a checkpoint at 12. */
async function checkpointedJournal(): Promise<string> {
  const file = await writeJournal(4);
  (await startChecked(file)).close();
  return file;
}

function forgeEpoch(file: string): Promise<unknown> {
  const other = loadOrCreateSigningKey(makeTempDir());
  const opened = openDatabase(file);
  const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
  const forged = { epoch: 1, at_ms: 0, previous: null, stripe: {}, key_id: key.keyId };
  const signature = sign(null, Buffer.from(epochSigningInput(forged)), other.privateKey).toString('base64url');
  return journal.append('EPOCH', EPOCH_CHAIN_ID, { ...forged, signature }).finally(() => opened.close());
}

const cases: Array<{ name: string; edit: (file: string) => Promise<unknown>; code: string; withoutKey: boolean }> = [
  {
    name: 'the tail cut, seals and all, with the store’s checkpoint left',
    edit: async (file) =>
      tamper(file, (s: Database.Database) => {
        s.prepare('DELETE FROM entries WHERE seq > 8').run();
        s.prepare('DELETE FROM journal_seals WHERE seq > 8').run();
      }),
    code: 'journal_behind_checkpoint',
    withoutKey: true,
  },
  {
    name: 'the journal id removed, its checkpoints left',
    edit: async (file) => tamper(file, (s: Database.Database) => s.prepare('DELETE FROM journal_meta').run()),
    code: 'journal_corrupt',
    withoutKey: true,
  },
  {
    name: 'an epoch begun by an entry not signed with the receipt key',
    edit: (file) => forgeEpoch(file),
    code: 'epoch_invalid',
    withoutKey: false,
  },
];

describe('npm run verify -- --journal refuses what start-up refuses', () => {
  it('an untouched journal with its checkpoints passes, with the key and without', async () => {
    const file = await checkpointedJournal();
    expect(await startRefusal(file)).toBeNull();
    expect(await verifyOffline(file, true)).toEqual({ exitCode: 0, problem: null });
    expect(await verifyOffline(file, false)).toEqual({ exitCode: 0, problem: null });
  });

  for (const c of cases) {
    it(`${c.name}: the same code as start-up, offline`, async () => {
      const file = await checkpointedJournal();
      await c.edit(file);
      const refused = await startRefusal(file);
      expect(refused?.code).toBe(c.code);
      const withKey = await verifyOffline(file, true);
      expect(withKey.exitCode).toBe(1);
      expect(withKey.problem?.code).toBe(c.code);
      if (c.withoutKey) expect((await verifyOffline(file, false)).problem?.code).toBe(c.code);
    });
  }
});
