import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import type { MirrorConfig } from '../../server/config/integrity.ts';
import { readCheckpoint } from '../../server/integrity/checkpoint.ts';
import { epochSigningInput, startEpoch } from '../../server/integrity/epoch.ts';
import { openMirror } from '../../server/integrity/mirrors.ts';
import { verifyJournalFile } from '../../server/integrity/verify-journal.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { signReceipt } from '../../server/receipts/receipts.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import { checkpointKey as key, startChecked, startRefusal } from '../support/checkpoints.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, makeTempDir } from '../support/db-journals.ts';
import { writeJournal } from '../support/tamper.ts';
import { sign } from 'node:crypto';

afterEach(cleanUpDatabases);

// A restore starts a new epoch: the restored journal is behind its mirrors by design, and its
// first entry names the last checkpoint of the old epoch that the mirrors hold. Made here by hand;
// the restore command that writes it is the operators'.

const WHAT_STRIPE_SAID = { checked_at_ms: 1_700_000_500_000, refunds_after_backup: [{ refund: 're_after_backup', effect_id: effectIdOf(20), amount: 500 }] };

async function appendOn(file: string, from: number, count: number): Promise<void> {
  const opened = openDatabase(file);
  const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
  for (let n = from; n < from + count; n++) await journal.append('PROPOSED', effectIdOf(n), fields('PROPOSED'));
  opened.close();
}

/** Begin an epoch on a journal file by hand, as the restore command will: naming `previousNote`. */
async function beginEpoch(file: string, previousNote: string | null, signingKey = key) {
  const opened = openDatabase(file);
  try {
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    const journalId = opened.sqlite.prepare<[], { value: string }>("SELECT value FROM journal_meta WHERE name = 'journal_id'").get()?.value ?? '';
    return await startEpoch({ journal, key: signingKey, journalId, previousNote, stripe: WHAT_STRIPE_SAID, atMs: 1_700_000_600_000 });
  } finally {
    opened.close();
  }
}

/**
 * A journal checkpointed at 12 entries, backed up, grown to 17 and checkpointed again to `mirror`,
 * then restored from the backup: 12 entries, behind the mirror.
 */
async function restoredBehindMirror(mirror: MirrorConfig) {
  const file = await writeJournal(4);
  (await startChecked(file, [mirror])).close();
  const backup = path.join(makeTempDir(), 'backup.sqlite');
  fs.copyFileSync(file, backup);
  await appendOn(file, 20, 5);
  (await startChecked(file, [mirror])).close();
  const atSeventeen = await openMirror(mirror).latest();
  fs.copyFileSync(backup, file);
  return { file, atSeventeen: atSeventeen ?? '' };
}

const fileMirror = (): MirrorConfig => ({ kind: 'file', path: path.join(makeTempDir(), 'checkpoints.jsonl') });

describe('a restore starts a new epoch', () => {
  it('a restored journal is refused until an epoch entry names the mirror’s last checkpoint; then it starts in epoch 1 and signs there', async () => {
    const mirror = fileMirror();
    const { file, atSeventeen } = await restoredBehindMirror(mirror);
    expect((await startRefusal(file, [mirror]))?.code).toBe('journal_behind_checkpoint');

    const entry = await beginEpoch(file, atSeventeen);
    expect(entry).toMatchObject({ kind: 'EPOCH', effect_id: EPOCH_CHAIN_ID, epoch: 1, previous: { size: 17, note: atSeventeen }, stripe: WHAT_STRIPE_SAID, key_id: key.keyId });

    const started = await startChecked(file, [mirror]);
    try {
      expect(started.checkpointer.origin).toMatch(/\/epoch\/1$/);
      // 12 restored entries and the epoch's first: the global chain goes on through it.
      expect(started.views.head?.size).toBe(13);
      const newest = (await started.store.latest());
      expect(newest).toMatchObject({ epoch: 1, size: 13 });
      // The epoch's entry is the journal's, not a refund: no item, no ledger row.
      const { inbox } = await started.views.current();
      expect(JSON.stringify(inbox)).not.toContain(EPOCH_CHAIN_ID);
      expect(started.logged.filter((l) => l.level === 'warn')).toEqual([]);
    } finally {
      started.close();
    }
    // The mirror now holds epoch 1's checkpoint, and a restart holds the journal against it.
    const latest = readCheckpoint((await openMirror(mirror).latest()) ?? '', key);
    expect(latest.ok && latest.checkpoint.origin).toMatch(/\/epoch\/1$/);
    expect(await startRefusal(file, [mirror])).toBeNull();
  });

  it('old checkpoints keep verifying against the old epoch, and old receipts against the key', async () => {
    const mirror = fileMirror();
    const first = await writeJournal(2);
    const before = await startChecked(first, [mirror]);
    const chain = (await before.views.current()).chain;
    const receipt = signReceipt(effectIdOf(1), await chain(effectIdOf(1)), key);
    const epochZeroNote = (await before.store.latest())?.note ?? '';
    before.close();
    await beginEpoch(first, epochZeroNote);
    (await startChecked(first, [mirror])).close();
    const offline = await verifyJournalFile(first, { note: epochZeroNote, publicKeyPem: key.publicKeyPem, keyId: key.keyId });
    expect(offline).toMatchObject({ valid: true, problem: null, checkpoint: { size: 6 } });
    expect(await verifyReceipt(JSON.parse(JSON.stringify(receipt)), key.publicKeyPem)).toMatchObject({ valid: true, signed: true });
  });

  it('an epoch entry that names an earlier checkpoint than the mirror’s last is refused: the restore left out entries it knew of', async () => {
    const mirror = fileMirror();
    const { file } = await restoredBehindMirror(mirror);
    const opened = openDatabase(file);
    const atTwelve = opened.sqlite.prepare<[], { note: string }>('SELECT note FROM journal_checkpoints ORDER BY id DESC LIMIT 1').get()?.note ?? '';
    opened.close();
    await beginEpoch(file, atTwelve);
    const refused = await startRefusal(file, [mirror]);
    expect(refused?.code).toBe('journal_behind_checkpoint');
    expect(refused?.message).toMatch(/covers 17 entries of epoch 0, and the entry that began epoch 1 names the one at 12 entries: the restore left out entries it knew of/);
    const offline = await verifyJournalFile(file, { note: (await openMirror(mirror).latest()) ?? '', publicKeyPem: key.publicKeyPem, keyId: key.keyId });
    expect(offline.problem?.code).toBe('journal_behind_checkpoint');
  });

  it('an epoch entry not signed with the receipt key is refused, so a cut cannot pass for a restore', async () => {
    const mirror = fileMirror();
    const { file, atSeventeen } = await restoredBehindMirror(mirror);
    const other = loadOrCreateSigningKey(makeTempDir());
    // Signed with another key but naming the receipt key's id: what someone without the key can write.
    const opened = openDatabase(file);
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    const read = readCheckpoint(atSeventeen, key);
    const previous = read.ok ? { ...read.checkpoint, note: atSeventeen } : null;
    const forged = { epoch: 1, at_ms: 0, previous, stripe: {}, key_id: key.keyId };
    await journal.append('EPOCH', EPOCH_CHAIN_ID, { ...forged, signature: sign(null, Buffer.from(epochSigningInput(forged)), other.privateKey).toString('base64url') });
    opened.close();
    const refused = await startRefusal(file, [mirror]);
    expect(refused?.code).toBe('epoch_invalid');
    expect(refused?.message).toMatch(/the entry that began epoch 1 does not verify with the receipt key.*restore the database from a backup/);
    expect((await verifyJournalFile(file, { note: atSeventeen, publicKeyPem: key.publicKeyPem, keyId: key.keyId })).problem?.code).toBe('epoch_invalid');
  });

  it('a journal restored again to before the epoch is refused: the mirror holds a checkpoint of an epoch it does not have', async () => {
    const mirror = fileMirror();
    const { file, atSeventeen } = await restoredBehindMirror(mirror);
    const preEpoch = path.join(makeTempDir(), 'pre-epoch.sqlite');
    fs.copyFileSync(file, preEpoch);
    await beginEpoch(file, atSeventeen);
    (await startChecked(file, [mirror])).close();
    const refused = await startRefusal(preEpoch, [mirror]);
    expect(refused?.code).toBe('journal_behind_checkpoint');
    expect(refused?.message).toMatch(/is of epoch 1 and the journal is in epoch 0: the entry that began epoch 1 was removed/);
  });

  it('the EPOCH kind lives on the epoch chain alone', async () => {
    const opened = openDatabase(path.join(makeTempDir(), 'j.sqlite'));
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    await expect(journal.append('EPOCH', effectIdOf(1), fields('EPOCH'))).rejects.toThrow(/EPOCH does not belong/);
    await expect(journal.append('PROPOSED', EPOCH_CHAIN_ID, fields('PROPOSED'))).rejects.toThrow(/PROPOSED does not belong/);
    opened.close();
  });
});
