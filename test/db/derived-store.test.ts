import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionLock } from '../../db/connection.ts';
import { rowBytes, storedRowBytes } from '../../db/derived-digest.ts';
import { SqliteDerivedTables, type ViewSum } from '../../db/derived-store.ts';
import type { DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openReadOnlyStorage, openStorage, storageOver } from '../../db/sqlite-storage.ts';
import { canonical } from '../../shared/receipts/canonical.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, openTempDatabase, tempDbFile } from '../support/db-journals.ts';
import { allRows, at, batch, put, recomputed, row } from '../port/derived.contract.ts';

// The derived tables on SQLite beyond their contract (test/port/derived.contract.ts): what the
// rows hold on disk, the indexes their lists read, a batch that fails half-way, their place on the
// journal's connection, and a storage opened read-only.

const opened: Storage[] = [];
afterEach(async () => {
  for (const storage of opened.splice(0)) await storage.close();
  cleanUpDatabases();
});

async function storageAt(file: string, readOnly = false): Promise<Storage> {
  const storage = readOnly ? await openReadOnlyStorage(file) : await openStorage({ file });
  opened.push(storage);
  return storage;
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('the derived rows on disk', () => {
  it('keep each body as its canonical JSON text, and the digest is taken over that text as it is', async () => {
    const { db, sqlite } = openTempDatabase();
    const tables = new SqliteDerivedTables(db);
    const body = { z: 1, a: { y: [3, 'é', null], b: 1e21, c: -0.5 }, m: '𝄞\n"' };
    await tables.advance(batch(0, 1, [put('ledger', row('k', 3, body, true))]));
    const stored = sqlite.prepare('SELECT view, key, ord, open, body FROM derived_rows').all();
    expect(stored).toEqual([{ view: 'ledger', key: 'k', ord: 3, open: 1, body: canonical(body) }]);
    expect((await tables.digests())[0]).toEqual(await recomputed(tables, 'ledger'));
  });

  it('the bytes hashed from a stored row are the bytes of the row itself, whatever its key, order and body', () => {
    const rows: DerivedRow[] = [
      row('a', 0),
      row('é "quoted" \\ 𝄞', -9_007_199_254_740_991, { nested: { deep: [1, 2, { x: null }] }, 'ünï': true }, true),
      row('k', 1_700_000_000_000, { n: 0.1, e: 1e-7, big: 123456789012345680000 }),
    ];
    for (const r of rows) expect(storedRowBytes('ledger', r.key, r.order, r.open, canonical(r.body))).toBe(rowBytes('ledger', r));
  });
});

describe('lists on SQLite', () => {
  it('read the (view, ord, key) or (view, open, ord, key) index, in its order, seeking to a page\'s start, with no sort of their own', async () => {
    const { db, sqlite } = openTempDatabase();
    const tables = new SqliteDerivedTables(db);
    await tables.advance(batch(0, 1, [put('ledger', row('a', 1)), put('ledger', row('b', 1, {}, true))]));
    const seen: string[] = [];
    const prepare = sqlite.prepare.bind(sqlite);
    sqlite.prepare = ((source: string) => {
      if (source.startsWith('select') && source.includes('"derived_rows"') && source.includes('order by')) seen.push(source);
      return prepare(source);
    }) as typeof sqlite.prepare;
    for (const direction of ['asc', 'desc'] as const) {
      for (const open of [undefined, true]) {
        for (const after of [undefined, { order: 1, key: 'a' }]) await tables.list('ledger', { direction, limit: 2, ...(open === undefined ? {} : { open }), ...(after === undefined ? {} : { after }) });
      }
    }
    sqlite.prepare = prepare;
    expect(seen).toHaveLength(8);
    for (const source of seen) {
      const params = Array.from({ length: source.split('?').length - 1 }, () => 1);
      const plan = (sqlite.prepare(`EXPLAIN QUERY PLAN ${source}`).all(...params) as Array<{ detail: string }>).map((step) => step.detail).join('; ');
      expect(plan).toMatch(source.includes('"open" = ?') ? /USING (COVERING )?INDEX derived_rows_open/ : /USING (COVERING )?INDEX derived_rows_order/);
      expect(plan).not.toMatch(/TEMP B-TREE/);
      // A page after a row seeks to its order in the index, rather than reading from the first row.
      if (source.includes('"key" >') || source.includes('"key" <')) expect(plan).toMatch(/ord[<>]\?\)/);
    }
  });
});

/** Fails on the second change of a batch, after the first was written in its transaction. */
class FailingHalfWay extends SqliteDerivedTables {
  #moves = 0;
  protected override moveSum(sum: ViewSum, added: bigint | null, removed: bigint | null): ViewSum {
    this.#moves += 1;
    if (this.#moves === 2) throw new Error('the disk is gone');
    return super.moveSum(sum, added, removed);
  }
}

describe('a batch that fails half-way', () => {
  it('leaves nothing of it: the rows, digests and cursor stand as before it', async () => {
    const { db, file } = openTempDatabase();
    const tables: DerivedTables = new FailingHalfWay(db);
    const elsewhere = new SqliteDerivedTables(openTempDatabase(file).db);
    await elsewhere.advance(batch(0, 1, [put('ledger', row('a', 1))]));
    await expect(tables.advance(batch(1, 2, [put('ledger', row('b', 2)), put('ledger', row('a', 1, { changed: true }))]))).rejects.toThrow('the disk is gone');
    expect(await elsewhere.cursor()).toEqual(at(1));
    expect(await allRows(elsewhere, 'ledger')).toEqual([row('a', 1)]);
    expect(await elsewhere.digests()).toEqual([await recomputed(elsewhere, 'ledger')]);
    expect(await tables.advance(batch(1, 2, [put('ledger', row('c', 3))]))).toBe(true);
  });
});

describe('Storage.derived', () => {
  it('shares the journal connection: batches and appends at once each run whole, and another open of the file sees both', async () => {
    const file = tempDbFile();
    const storage = await storageAt(file);
    const journal = storage.journal(fakeClock());
    const work: Promise<unknown>[] = [];
    for (let n = 1; n <= 20; n++) {
      work.push(journal.append('PROPOSED', effectIdOf(n), fields('PROPOSED')));
      work.push(storage.derived.advance(batch(n - 1, n, [put('ledger', row(effectIdOf(n), n))])));
    }
    const settled = await Promise.all(work);
    expect(settled.filter((value) => value === true)).toHaveLength(20);
    const again = await storageAt(file);
    expect(await again.journal(fakeClock()).scan(0, 100)).toHaveLength(20);
    expect((await allRows(again.derived, 'ledger')).map((r) => r.key)).toEqual(Array.from({ length: 20 }, (_, i) => effectIdOf(i + 1)));
  });

  it('a batch asked while a journal transaction is open waits for it, and is not undone by its rollback', async () => {
    const database = openTempDatabase();
    const storage = storageOver(database);
    let settled = false;
    let settledInside = false;
    let advanced: Promise<boolean> = Promise.resolve(false);
    await connectionLock(database.sqlite).run(async () => {
      // As the journal's group commit does: a transaction opened by hand, awaited inside, rolled back.
      database.sqlite.exec('BEGIN IMMEDIATE');
      advanced = storage.derived.advance(batch(0, 1, [put('ledger', row('a', 1))]));
      void advanced.then(() => {
        settled = true;
      });
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
      settledInside = settled;
      database.sqlite.exec('ROLLBACK');
    });
    expect(await advanced).toBe(true);
    expect(settledInside).toBe(false);
    expect(await storage.derived.cursor()).toEqual(at(1));
    expect(await allRows(storage.derived, 'ledger')).toEqual([row('a', 1)]);
  });

  it('read-only, reads the tables and refuses to write them with store_read_only; the file keeps its bytes', async () => {
    const file = tempDbFile();
    const writer = await storageAt(file);
    await writer.derived.advance(batch(0, 10_000, [put('ledger', row('a', 1))]));
    await writer.close();
    const before = sha256(file);
    const reader = await storageAt(file, true);
    expect(await reader.derived.cursor()).toEqual(at(10_000));
    expect(await allRows(reader.derived, 'ledger')).toEqual([row('a', 1)]);
    expect(await reader.derived.marks()).toHaveLength(1);
    await expect(reader.derived.advance(batch(10_000, 10_001, []))).rejects.toMatchObject({ code: 'store_read_only' });
    await expect(reader.derived.reset('v2')).rejects.toMatchObject({ code: 'store_read_only' });
    expect(sha256(file)).toBe(before);
  });

  it('read-only on a file an Interlock before the derived tables wrote: never built, nothing to read', async () => {
    const { sqlite, file } = openTempDatabase();
    for (const table of ['derived_rows', 'derived_cursor', 'derived_digests', 'derived_marks']) sqlite.exec(`DROP TABLE ${table}`);
    sqlite.close();
    const reader = await storageAt(file, true);
    expect(await reader.derived.cursor()).toBeNull();
    expect(await reader.derived.get('ledger', 'a')).toBeNull();
    expect(await allRows(reader.derived, 'ledger')).toEqual([]);
    expect([await reader.derived.digests(), await reader.derived.marks()]).toEqual([[], []]);
  });
});
