import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import type { JsonObject } from '../../shared/json.ts';
import { canonical, sha256Hex, storedTextHashHolds } from '../../server/journal/hash.ts';
import { JournalCorruptError } from '../../server/journal/store.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, openTempDatabase } from '../support/db-journals.ts';

// Bodies are stored as canonical JSON, so a read checks the hash over the stored text without
// re-serialising the entry; a body in any other form is checked the long way, never trusted.

afterEach(cleanUpDatabases);

/** The canonical text of `fields` sealed with the hash of the rest, as a journal stores it. */
function sealedText(fields: JsonObject): { text: string; hash: string } {
  const hash = sha256Hex(canonical(fields));
  return { text: canonical({ ...fields, hash }), hash };
}

const fieldsWithoutHash = fc.dictionary(
  fc.string().filter((key) => key !== 'hash'),
  fc.jsonValue(),
  { maxKeys: 8 },
) as fc.Arbitrary<JsonObject>;

describe('storedTextHashHolds', () => {
  it('holds for the canonical text of every sealed value, wherever its hash member sorts', () => {
    fc.assert(fc.property(fieldsWithoutHash, (fields) => {
      const { text, hash } = sealedText(fields);
      expect(storedTextHashHolds(text, hash)).toBe(true);
    }));
    const samples: JsonObject[] = [{}, { a: 1 }, { z: 1 }, { a: 1, z: [{ hash: 'nested' }] }];
    for (const fields of samples) {
      const { text, hash } = sealedText(fields);
      expect(storedTextHashHolds(text, hash), text).toBe(true);
    }
  });

  it('fails for a text with any one character changed, and for another hash', () => {
    fc.assert(fc.property(fieldsWithoutHash, fc.nat(), fc.integer({ min: 1, max: 0xffff }), (fields, where, delta) => {
      const { text, hash } = sealedText(fields);
      const at = where % text.length;
      const changed = text.slice(0, at) + String.fromCharCode((text.charCodeAt(at) + delta) % 0x10000) + text.slice(at + 1);
      expect(storedTextHashHolds(changed, hash)).toBe(false);
    }));
    const { text } = sealedText({ a: 1 });
    expect(storedTextHashHolds(text, sha256Hex('other'))).toBe(false);
  });

  it('fails for the same entry written in another key order: that text is not what was hashed', () => {
    const fields = { b: 2, a: 1 };
    const hash = sha256Hex(canonical(fields));
    expect(storedTextHashHolds(JSON.stringify({ ...fields, hash }), hash)).toBe(false);
  });
});

describe('SqliteJournal bodies', () => {
  it('are stored as canonical JSON', async () => {
    const { db, sqlite } = openTempDatabase();
    const journal = new SqliteJournal({ db, ...fakeClock() });
    const entry = await journal.append('PROPOSED', effectIdOf(1), fields('PROPOSED', { zeta: 1, alpha: { y: 2, x: 1 } }));
    expect(sqlite.prepare('SELECT body FROM entries').pluck().get()).toBe(canonical(entry));
  });

  it('a body in another form whose entry still hashes right is read (checked in full); an edited one fails closed', async () => {
    const { db, sqlite } = openTempDatabase();
    const journal = new SqliteJournal({ db, ...fakeClock() });
    const eid = effectIdOf(2);
    const first = await journal.append('PROPOSED', eid, fields('PROPOSED', { zeta: 1, alpha: 2 }));
    await journal.append('AUTHORIZED', eid, fields('AUTHORIZED', { lease: 'g1' }));
    sqlite.exec('DROP TRIGGER entries_no_update;');
    // The same entry in insertion order, as bodies were once written: not the hashed text.
    sqlite.prepare('UPDATE entries SET body = ? WHERE seq = 1').run(JSON.stringify(first));
    const reader = new SqliteJournal({ db, ...fakeClock() });
    expect((await reader.entries(eid))[0]).toEqual(first);
    expect(await reader.scan(0, 10)).toHaveLength(2);
    sqlite.prepare('UPDATE entries SET body = ? WHERE seq = 1').run(JSON.stringify({ ...first, alpha: 3 }));
    await expect(new SqliteJournal({ db, ...fakeClock() }).entries(eid)).rejects.toThrow(JournalCorruptError);
  });
});
