import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bytesHash, moveDigestBy, storedRowBytes } from '../../db/derived-digest.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { checkSealedChain } from '../../server/journal/seals.ts';
import { JournalCorruptError } from '../../server/journal/store.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, makeTempDir } from '../support/db-journals.ts';
import { confirmedPastTheMark, derivedCheckFiles, passOver, REFUNDS } from '../support/derived-check-world.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';
import { DerivedCheck } from '../../server/integrity/derived-check.ts';
import { ledgerRefold } from '../../server/ledger/refold.ts';
import { copyJournal, tamper, writeJournal } from '../support/tamper.ts';

// The reads the background pass's check of the derived tables makes, each a query of its own on
// SQLite (db/journal-store.ts `chainWithSeals`, db/derived-store.ts `storedHashes`, the snapshot's
// keyset pages in db/derived-snapshot.ts): what they read must be what the lookups one at a time
// read, and damage must still be found through them.

const { viewsOver } = derivedCheckFiles();

let opened: OpenDatabase | null = null;
afterEach(() => {
  opened?.close();
  opened = null;
  cleanUpDatabases();
});

function journalOn(file: string): SqliteJournal {
  opened = openDatabase(file);
  return new SqliteJournal({ db: opened.db, ...fakeClock() });
}

describe('a chain read with its seals in one query', () => {
  it('answers each entry’s own seal and the one before it, as the seals stand', async () => {
    const journal = journalOn(copyJournal(await writeJournal()));
    for (const n of [1, 2, 4]) {
      const sealed = await journal.sealedChain(effectIdOf(n));
      expect(sealed).toHaveLength(3);
      for (const { seq, global, previousGlobal } of sealed) {
        expect(global).toBe(await journal.sealAt(seq));
        expect(previousGlobal).toBe(await journal.sealAt(seq - 1));
      }
      expect(checkSealedChain(effectIdOf(n), sealed)).toHaveLength(3);
    }
  });

  it('an entry whose seal was removed is refused', async () => {
    const file = copyJournal(await writeJournal());
    // Chain 2's second entry is seq 6 (chains of three, written interleaved).
    tamper(file, (s) => expect(s.prepare('DELETE FROM journal_seals WHERE seq = 6').run().changes).toBe(1));
    const journal = journalOn(file);
    await expect(journal.sealedChain(effectIdOf(2))).rejects.toThrow(/seq 6 has no global seal/);
  });

  it('a seal edited before an entry (its previous seal) is answered as stored, and the chain fails its check', async () => {
    const file = copyJournal(await writeJournal());
    tamper(file, (s) => expect(s.prepare("UPDATE journal_seals SET global_hash = ? WHERE seq = 5").run('0'.repeat(64)).changes).toBe(1));
    const journal = journalOn(file);
    const sealed = await journal.sealedChain(effectIdOf(2));
    expect(sealed.find(({ seq }) => seq === 6)?.previousGlobal).toBe('0'.repeat(64));
    expect(() => checkSealedChain(effectIdOf(2), sealed)).toThrow(JournalCorruptError);
  });
});

describe('a chain’s rows read as stored', { timeout: 90_000 }, () => {
  it('a ledger row rewritten in another form of the same JSON, with its digest moved to match, is found byte for byte', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { views } = await confirmedPastTheMark(viewsOver(file));
    const id = refundEffectId(7);
    tamper(file, (s) => {
      const row = s.prepare("SELECT ord, open, body FROM derived_rows WHERE view = 'ledger' AND key = ?").get(id) as { ord: number; open: number; body: string };
      // The same object, a space after its first comma: parsed, it is the row the fold makes.
      const body = row.body.replace(',', ', ');
      expect(JSON.parse(body)).toEqual(JSON.parse(row.body));
      expect(body).not.toBe(row.body);
      const digest = s.prepare("SELECT sum FROM derived_digests WHERE view = 'ledger'").get() as { sum: string };
      const before = bytesHash(storedRowBytes('ledger', id, row.ord, row.open === 1, row.body));
      const after = bytesHash(storedRowBytes('ledger', id, row.ord, row.open === 1, body));
      expect(s.prepare("UPDATE derived_rows SET body = ? WHERE view = 'ledger' AND key = ?").run(body, id).changes).toBe(1);
      expect(s.prepare("UPDATE derived_digests SET sum = ? WHERE view = 'ledger'").run(moveDigestBy(digest.sum, after, before)).changes).toBe(1);
    });
    const { pass, counts } = passOver(views);
    expect(await pass.run()).toBe(false);
    expect(counts).toMatchObject({ derivedMismatches: 1, damage: 0 });
  });

  it('a chain that took entries after its batch read the cursor, before the batch’s rows were read, waits: no mismatch', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { journal, tables, views } = await confirmedPastTheMark(viewsOver(file));
    // A request made after the mark, confirmed (and taken by the tables) while its batch is read.
    const made = refundChain(REFUNDS + 1, ['succeeded']);
    await journal.appendSealed(made.slice(0, 4));
    const cursorBefore = (await views.current()).seq;
    const id = refundEffectId(REFUNDS + 1);
    const rowBefore = await tables.get('ledger', id);
    let moved = false;
    const writingOn = {
      cursor: () => tables.cursor(),
      newestMark: () => tables.newestMark(),
      snapshot: () => tables.snapshot(),
      get: (view: string, key: string) => tables.get(view, key),
      async storedHashes(names: readonly string[], keys: readonly string[]) {
        if (!moved && keys.includes(id)) {
          moved = true;
          await journal.appendSealed(made.slice(4));
          expect((await views.current()).seq).toBe(cursorBefore + made.length - 4);
          expect((await tables.cursor())?.seq).toBe(cursorBefore + made.length - 4);
        }
        return tables.storedHashes(names, keys);
      },
    };
    const check = new DerivedCheck(journal, writingOn, [ledgerRefold('inbox')]);
    expect(await check.begin()).toBe(true);
    while (!check.finished) await check.step(() => true);
    expect(() => check.compare()).not.toThrow();
    expect(moved).toBe(true);
    expect(await tables.get('ledger', id)).not.toEqual(rowBefore);
  });

  it('a chain of a batch whose seal was removed is refused by the batch’s read, through the views’ journal', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { views } = await confirmedPastTheMark(viewsOver(file));
    const id = refundEffectId(7);
    tamper(file, (s) => {
      const { seq } = s.prepare('SELECT max(seq) AS seq FROM entries WHERE effect_id = ?').get(id) as { seq: number };
      expect(s.prepare('DELETE FROM journal_seals WHERE seq = ?').run(seq).changes).toBe(1);
    });
    const check = views.derivedCheck();
    expect(await check.begin()).toBe(true);
    try {
      await expect((async () => {
        while (!check.finished) await check.step(() => true);
      })()).rejects.toThrow(/has no global seal/);
    } finally {
      check.close();
    }
  });

  it('every row is read once through the snapshot’s keyset pages, and one added past the last is summed', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { tables } = await confirmedPastTheMark(viewsOver(file));
    const count = async () => {
      const snapshot = await tables.snapshot();
      const seen = new Set<string>();
      let read = 0;
      for (let page = await snapshot.next(200); page.length > 0; page = await snapshot.next(200)) {
        for (const { view, key } of page) seen.add(`${view}\u0000${key}`);
        read += page.length;
      }
      snapshot.close();
      return { read, distinct: seen.size };
    };
    const rows = (file: string) => {
      const db = openDatabase(file);
      try {
        return (db.sqlite.prepare('SELECT count(*) AS n FROM derived_rows').get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    const before = rows(file);
    expect(before).toBeGreaterThan(1_000);
    expect(await count()).toEqual({ read: before, distinct: before });
    tamper(file, (s) => s.prepare("INSERT INTO derived_rows (view, key, ord, open, body) VALUES ('~last', '~', 0, 0, '{}')").run());
    expect(await count()).toEqual({ read: before + 1, distinct: before + 1 });
  });
});
