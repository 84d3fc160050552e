import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { type Checkpoint, mayFollow, readCheckpoint } from '../../server/integrity/checkpoint.ts';
import { verifyJournalFile } from '../../server/integrity/verify-journal.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import type { IntegrityFixture } from '../fixtures/journals/integrity-replay.ts';
import { fixtureSigningKey, readFixture } from '../fixtures/journals/replay.ts';
import { startChecked } from '../support/checkpoints.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

// integrity-1 (write-integrity-1.ts) was written once by the code that brought seals, checkpoints
// and epochs: a journal restored from a backup that began epoch 1 naming its mirror's last
// checkpoint. Every later code must seal its entries to the same global chain, verify its
// checkpoints and its epoch, and start on it.

const FIXTURES = fileURLToPath(new URL('../fixtures/journals/', import.meta.url));
const entries = readFixture(path.join(FIXTURES, 'integrity-1.jsonl'));
const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'integrity-1.json'), 'utf8')) as IntegrityFixture;
const key = fixtureSigningKey();

/** The fixture as its data folder held it: the journal, its seals, its id and checkpoints; and its mirror. */
async function restore(): Promise<{ file: string; mirror: string }> {
  const file = path.join(makeTempDir(), 'interlock.sqlite');
  const opened = openDatabase(file);
  await new SqliteJournal({ db: opened.db, ...fakeClock() }).appendSealed(entries);
  opened.sqlite.prepare("INSERT INTO journal_meta (name, value) VALUES ('journal_id', ?)").run(fixture.journal_id);
  const insert = opened.sqlite.prepare('INSERT INTO journal_checkpoints (epoch, size, head, note, signed_at_ms) VALUES (?, ?, ?, ?, ?)');
  for (const c of fixture.checkpoints) insert.run(c.epoch, c.size, c.head, c.note, c.signed_at_ms);
  opened.close();
  const mirror = path.join(makeTempDir(), 'mirror.jsonl');
  fs.writeFileSync(mirror, fixture.mirror.map((note) => `${JSON.stringify({ note })}\n`).join(''));
  return { file, mirror };
}

describe('the fixture journal integrity-1', () => {
  it('its entries seal to the global chain they were written with', async () => {
    const { file } = await restore();
    const opened = openDatabase(file);
    const seals = opened.sqlite.prepare('SELECT seq, global_hash FROM journal_seals ORDER BY seq').all();
    opened.close();
    expect(seals).toEqual(fixture.seals);
    expect(entries.filter((e) => e.kind === 'EPOCH').map((e) => e.effect_id)).toEqual([EPOCH_CHAIN_ID]);
  });

  it('every checkpoint it kept or mirrored verifies with the key, and each extends the one before it in its epoch', () => {
    const read = (note: string): Checkpoint => {
      const reading = readCheckpoint(note, key);
      if (!reading.ok) throw new Error(`${reading.code}: ${reading.message}`);
      return reading.checkpoint;
    };
    const mirrored = fixture.mirror.map(read);
    expect(mirrored.map((c) => [c.origin.replace(fixture.journal_id, 'ID'), c.size])).toEqual([
      ['interlock/journal/ID/epoch/0', 20],
      ['interlock/journal/ID/epoch/0', 40],
      ['interlock/journal/ID/epoch/0', 60],
      ['interlock/journal/ID/epoch/0', 62],
      ['interlock/journal/ID/epoch/1', 41],
    ]);
    for (let i = 1; i < mirrored.length; i++) {
      const [previous, next] = [mirrored[i - 1]!, mirrored[i]!];
      if (previous.origin === next.origin) expect(mayFollow(previous, next)).toBe(true);
    }
    // Where the restored journal still holds them, the heads are its global chain's.
    const globalAt = new Map(fixture.seals.map((s, i) => [i + 1, s.global_hash]));
    for (const c of fixture.checkpoints) expect(c.head).toBe(globalAt.get(c.size));
  });

  it('starts in epoch 1 held against its store and its mirror, with nothing new to sign, and replays to views without the epoch', async () => {
    const { file, mirror } = await restore();
    const started = await startChecked(file, [{ kind: 'file', path: mirror }], {}, key);
    try {
      expect(started.checkpointer.origin).toBe(`interlock/journal/${fixture.journal_id}/epoch/1`);
      expect((await started.store.all())).toHaveLength(fixture.checkpoints.length);
      const { inbox } = await started.views.current();
      const every = (await inbox.everySummary()).map((summary) => summary.effectId);
      expect(every).not.toContain(EPOCH_CHAIN_ID);
      expect(every.length).toBe(new Set(entries.filter((e) => e.kind !== 'EPOCH').map((e) => e.effect_id)).size);
    } finally {
      started.close();
    }
    const offline = await verifyJournalFile(file, { note: fixture.mirror.at(-1) ?? '', publicKeyPem: key.publicKeyPem, keyId: key.keyId });
    expect(offline).toMatchObject({ valid: true, size: entries.length });
    // The old epoch's last checkpoint, which the epoch names, is accepted offline too.
    expect((await verifyJournalFile(file, { note: fixture.mirror[3] ?? '', publicKeyPem: key.publicKeyPem, keyId: key.keyId })).valid).toBe(true);
  });
});
