import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { checkpointAt, clock, closeAll, dir, FIRST, journalFile, opened, rebuilt, refusedCheckpoint, startViews } from '../support/checkpoint-start.ts';
import { refundChain } from '../support/ledger-journal.ts';
import { rewriteEntry, tamper } from '../support/tamper.ts';

// Views started at the newest signed checkpoint (`startFrom: 'checkpoint'`), with the ledger
// alone kept in a table: the follower reads only the entries after the lower of the checkpoint
// and the tables' cursor, the ledger answers as one rebuilt from the whole journal, and a
// checkpoint that does not hold, or an entry after it changed, is refused at start.

describe('views started at the newest checkpoint', () => {
  it('read only the entries after it when the tables are past it, and the ledger is the one the whole journal gives', async () => {
    const storage = await opened(await journalFile());
    await checkpointAt(storage, 150);
    const views = startViews(storage, 'checkpoint');
    expect(await views.replayAtStart()).toBeNull();
    expect(views.followed.entriesRead).toBe(FIRST - 150);
    expect(views.head).toEqual(await storage.journal(clock).head());
    expect(await storage.derived.digests()).toEqual(await rebuilt(storage));
    // A late confirmation of a refund closed long before the start is folded again from the journal.
    await storage.journal(clock).appendSealed([refundChain(3, ['succeeded']).at(-1)!]);
    const { ledger, chain } = await views.current();
    const id = refundChain(3)[0]!.effect_id;
    expect(await storage.derived.digests()).toEqual(await rebuilt(storage));
    expect((await ledger.rowOf(id, (login) => login))?.confirmation).toBe('succeeded');
    // A chain begun before the start is shown whole, held against its seals.
    expect(await chain(id)).toEqual(await storage.journal(clock).entries(id));
  });

  it('read only the entries after the tables’ cursor when it is below the checkpoint', async () => {
    const storage = await opened(await journalFile(120));
    await checkpointAt(storage, 180);
    const views = startViews(storage, 'checkpoint');
    expect(await views.replayAtStart()).toBeNull();
    expect(views.followed.entriesRead).toBe(FIRST - 120);
    expect(await storage.derived.digests()).toEqual(await rebuilt(storage));
  });

  it('read the whole journal with no checkpoint, or told to start from zero', async () => {
    const storage = await opened(await journalFile());
    const none = startViews(storage, 'checkpoint');
    expect(await none.replayAtStart()).toBeNull();
    expect(none.followed.entriesRead).toBe(FIRST);
    await checkpointAt(storage, 150);
    const zero = startViews(storage, 'zero');
    expect(await zero.replayAtStart()).toBeNull();
    expect(zero.followed.entriesRead).toBe(FIRST);
  });

  it('refuse an entry after the checkpoint changed, its hash recomputed', async () => {
    const file = await journalFile();
    // Seq 180 is refund 30's COMMITTED: it now says another refund was made.
    tamper(file, (sqlite) => rewriteEntry(sqlite, 180, { result: { amount: 2_000, refund: 're_other', status: 'ok' } }));
    const storage = await opened(file);
    await checkpointAt(storage, 150);
    const views = startViews(storage, 'checkpoint');
    expect((await views.replayAtStart())?.message).toBe('journal entry seq 180 breaks the global chain: the entries before it were changed, removed or reordered');
    expect(views.unavailable).not.toBeNull();
  });

  it('refuse a checkpoint signed over a head the journal does not have at its size', async () => {
    const storage = await opened(await journalFile());
    await checkpointAt(storage, 150, { head: 'ab'.repeat(32) });
    expect(await refusedCheckpoint(storage)).toMatch(/^the newest checkpoint signed the head abab.* at size 150, but the seal at seq 150 is [0-9a-f]{64}: the journal was rewritten$/);
  });

  it('refuse a checkpoint whose row was changed after it was signed', async () => {
    const file = await journalFile();
    const storage = await opened(file);
    await checkpointAt(storage, 150);
    await closeAll();
    tamper(file, (sqlite) => sqlite.prepare('UPDATE journal_checkpoints SET size = 190').run());
    expect(await refusedCheckpoint(await opened(file))).toMatch(/^the newest checkpoint says size 190, .* but its note signed 150, .*: the row was written without the journal$/);
  });

  it('refuse a checkpoint whose note was changed after it was signed, its signature kept', async () => {
    const file = await journalFile();
    await checkpointAt(await opened(file), 150);
    await closeAll();
    // The note now says 190 entries: its columns say so too, but its signature was over 150.
    tamper(file, (sqlite) => sqlite.prepare("UPDATE journal_checkpoints SET size = 190, note = replace(note, char(10) || '150' || char(10), char(10) || '190' || char(10))").run());
    expect(await refusedCheckpoint(await opened(file))).toMatch(/^the newest checkpoint does not verify with the receipt key \(bad_signature: /);
  });

  it('refuse a checkpoint signed by another key', async () => {
    const storage = await opened(await journalFile());
    await checkpointAt(storage, 150, { key: loadOrCreateSigningKey(mkdtempSync(join(dir, 'other-key-'))) });
    expect(await refusedCheckpoint(storage)).toMatch(/^the newest checkpoint does not verify with the receipt key \(unknown_key: /);
  });
});

describe('views holding few tails', () => {
  it('hold at most as many as told, whatever the history, answer the same, and show a chain let go whole', async () => {
    const storage = await opened(await journalFile());
    const views = startViews(storage, 'zero', undefined, 10);
    expect(await views.replayAtStart()).toBeNull();
    expect(views.followed.tailsHeld).toBe(10);
    expect(await storage.derived.digests()).toEqual(await rebuilt(storage));
    // Refund 3 moved last at seq 153, long before the ten chains held.
    const id = refundChain(3)[0]!.effect_id;
    await storage.journal(clock).appendSealed([refundChain(3, ['succeeded']).at(-1)!]);
    const { chain } = await views.current();
    expect(await chain(id)).toEqual(await storage.journal(clock).entries(id));
    expect(await chain(id)).toHaveLength(5);
    expect(views.followed.tailsHeld).toBe(10);
  });
});
