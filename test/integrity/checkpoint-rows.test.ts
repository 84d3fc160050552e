import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { MirrorConfig } from '../../server/config/integrity.ts';
import { JournalDamagedError } from '../../server/integrity/damage.ts';
import { startChecked, startRefusal } from '../support/checkpoints.ts';
import { cleanUpDatabases, effectIdOf, fields, makeTempDir } from '../support/db-journals.ts';
import { writeJournal } from '../support/tamper.ts';

afterEach(cleanUpDatabases);

// A row of journal_checkpoints is trusted only as far as its signed note says: its size, head and
// epoch columns are copies someone who can write the data folder may change (the table refuses
// UPDATE and DELETE, not INSERT), so they must never decide what is signed, copied to the mirrors
// or verified again.

function fileMirror(): MirrorConfig {
  return { kind: 'file', path: path.join(makeTempDir(), 'mirror', 'checkpoints.jsonl') };
}

/** Insert a row that carries the newest real note but claims a size far beyond it: no trigger refuses an INSERT. */
function insertOversizedRow(sqlite: Database.Database): void {
  const newest = sqlite.prepare('SELECT epoch, head, note FROM journal_checkpoints ORDER BY id DESC LIMIT 1').get() as { epoch: number; head: string; note: string };
  sqlite.prepare('INSERT INTO journal_checkpoints (epoch, size, head, note, signed_at_ms) VALUES (?, ?, ?, ?, ?)').run(newest.epoch, 1_000_000_000, newest.head, newest.note, 1_700_000_000_000);
}

function mirroredSizes(mirror: MirrorConfig): number[] {
  const file = mirror.kind === 'file' ? mirror.path : '';
  return fs
    .readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => Number((JSON.parse(line) as { note: string }).note.split('\n')[1]));
}

describe('a checkpoint row is what its signed note says, or damage', () => {
  it('start-up refuses a stored checkpoint whose size or head is not the one its note signed', async () => {
    const file = await writeJournal(4);
    const mirror = fileMirror();
    (await startChecked(file, [mirror])).close();
    const started = await startChecked(file, [mirror]);
    insertOversizedRow(started.database.sqlite);
    started.close();

    const refused = await startRefusal(file, [mirror]);
    expect(refused).toBeInstanceOf(JournalDamagedError);
    expect(refused?.code).toBe('checkpoint_invalid');
    expect(refused?.message).toMatch(/newest checkpoint in the store .*size 1000000000.*its note signed 12/);
    expect(refused?.message).not.toContain('\n');
  });

  it('a row forged while the server runs stops neither the next checkpoint nor the tail’s check: the views become unavailable', async () => {
    const file = await writeJournal(4);
    const mirror = fileMirror();
    const started = await startChecked(file, [mirror]);
    try {
      expect(mirroredSizes(mirror)).toEqual([12]);
      insertOversizedRow(started.database.sqlite);
      for (let n = 20; n < 25; n++) await started.journal.append('PROPOSED', effectIdOf(n), fields('PROPOSED'));
      await started.views.current();
      // Signing over the forged row would have been skipped in silence, and the tail after it never read again.
      expect(await started.checkpointer.sign(true)).toBeNull();
      expect(started.views.unavailable?.corrupt.message).toMatch(/checkpoint/);
      expect(await started.checkpointer.verifyTail(started.journal)).toBe(false);
      expect(mirroredSizes(mirror)).toEqual([12]);
    } finally {
      started.close();
    }
  });
});
