import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { type OpenDatabase, openDatabase } from '../../db/open.ts';
import type { Entry } from '../../shared/entries.ts';
import { currentStatus } from '../../server/refunds/answers.ts';
import { LedgerChain } from '../../server/ledger/chain.ts';
import { textCell } from '../../server/csv/writer.ts';
import { ledgerCsvHeader, ledgerCsvRecord } from '../../server/ledger/csv.ts';
import { ledgerCsvStream } from '../../server/ledger/csv-stream.ts';
import { CHAINS_NEWEST_FIRST } from '../../db/sqlite-journal-file.ts';
import { ledgerRowsFromStore, openLedgerReader } from '../../server/ledger/export.ts';
import { decodeCursor, encodeCursor } from '../../server/ledger/filter.ts';
import { LedgerProjection } from '../../server/ledger/projection.ts';
import { readFixture } from '../fixtures/journals/replay.ts';

// The ledger's two paths over one journal: the projection the views keep, fed entry by entry, and
// the streaming read of the store the CSV is made from. The day-1 fixture journal holds every kind
// of chain the inbox writes (policy, approved, rejected, repaired, stale, breached, confirmed).

const FIXTURE = new URL('../fixtures/journals/day-1.jsonl', import.meta.url).pathname;
/** Every row an async generator gives. */
async function rowsOf<T>(rows: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const row of rows) all.push(row);
  return all;
}

const INBOX = 'inbox';
const displayName = (login: string) => `Name of ${login}`;

let dir: string;
let opened: OpenDatabase;
let entries: Entry[];
const file = () => join(dir, 'journal.sqlite');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-ledger-'));
  opened = openDatabase(file());
  entries = readFixture(FIXTURE);
  await new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() }).appendSealed(entries);
});
afterAll(() => {
  opened.close();
  rmSync(dir, { recursive: true, force: true });
});

function projected(): LedgerProjection {
  const projection = new LedgerProjection(INBOX);
  for (const [i, entry] of entries.entries()) projection.note(entry, i + 1);
  return projection;
}

describe('the ledger from the views and from the store', () => {
  it("folds each chain to the status its agent is told (currentStatus of the whole chain)", () => {
    const chains = new Map<string, Entry[]>();
    for (const entry of entries) chains.set(entry.effect_id, [...(chains.get(entry.effect_id) ?? []), entry]);
    let checked = 0;
    for (const [effectId, chain] of chains) {
      const folded = LedgerChain.start(chain[0]!, 1, INBOX);
      if (folded === null) continue;
      for (const entry of chain.slice(1)) folded.push(entry);
      expect([effectId, folded.status()]).toEqual([effectId, currentStatus(chain)]);
      checked += 1;
    }
    expect(checked).toBeGreaterThan(5);
  });

  it('the store read gives the projection\'s rows, row for row, newest first', async () => {
    const reader = await openLedgerReader(file());
    try {
      const fromStore = await rowsOf(ledgerRowsFromStore(reader, INBOX, displayName));
      const fromViews = projected().page({}, { limit: 10_000 }, displayName).rows;
      expect(fromStore).toEqual(fromViews);
      expect(new Set(fromStore.map((row) => row.status)).size).toBeGreaterThan(2);
      expect(fromStore.some((row) => row.decided_by_kind === 'person' && row.decided_by === 'Name of ana')).toBe(true);
    } finally {
      await reader.close();
    }
  });

  it('the store is read in the order the ledger shows, with no sort held in memory', () => {
    const opened = openDatabase(file());
    const plan = (opened.sqlite.prepare(`EXPLAIN QUERY PLAN ${CHAINS_NEWEST_FIRST}`).all() as { detail: string }[]).map((step) => step.detail);
    opened.close();
    expect(plan).toEqual(['SEARCH h USING INDEX entries_kind (kind=?)', 'SEARCH e USING INDEX entries_effect_seq (effect_id=?)']);
  });

  it('streams the CSV made in a worker: the store\'s rows, and stops when the reader goes away', async () => {
    const stream = ledgerCsvStream({ file: file(), inboxName: INBOX, filter: {}, displayNames: { ana: 'Name of ana' }, onError: () => {} });
    expect(stream).toBeInstanceOf(Readable);
    let text = '';
    for await (const chunk of stream) text += String(chunk);
    const reader = await openLedgerReader(file());
    const rows = await rowsOf(ledgerRowsFromStore(reader, INBOX, (login) => (login === 'ana' ? 'Name of ana' : login)));
    await reader.close();
    expect(text).toBe(ledgerCsvHeader() + rows.map(ledgerCsvRecord).join(''));
    const cut = ledgerCsvStream({ file: file(), inboxName: INBOX, filter: {}, displayNames: {}, onError: () => {} });
    await new Promise((resolve) => cut.once('readable', resolve));
    cut.destroy();
    await new Promise((resolve) => cut.once('close', resolve));
    expect(cut.destroyed).toBe(true);
  });

  it('a page and the next never share a row, and a cursor is opaque but exact', () => {
    const projection = projected();
    const all = projection.page({}, { limit: 10_000 }, displayName).rows;
    const first = projection.page({}, { limit: 3 }, displayName);
    const rest = projection.page({}, { beforeSeq: first.nextBeforeSeq!, limit: 10_000 }, displayName);
    expect([...first.rows, ...rest.rows]).toEqual(all);
    expect(rest.nextBeforeSeq).toBeNull();
    expect(decodeCursor(encodeCursor(42))).toBe(42);
    expect(encodeCursor(42)).not.toContain('42');
    for (const bad of ['', 'x', `${encodeCursor(42).slice(0, -1)}!`, `${encodeCursor(42)}=`, Buffer.from('ledger:v1:042').toString('base64url')]) expect(decodeCursor(bad)).toBeNull();
  });
});

describe('CSV cells', () => {
  it.each([
    ['case-1', '"case-1"'],
    ['=HYPERLINK("http://evil","x")', '"\'=HYPERLINK(""http://evil"",""x"")"'],
    ['+1+1', '"\'+1+1"'],
    ['-2-3', '"\'-2-3"'],
    ['@SUM(A1)', '"\'@SUM(A1)"'],
    ['\tx', '"\'\tx"'],
    ['\rx', '"\'\rx"'],
    ['a,b\r\nc', '"a,b\r\nc"'],
    ['say "hi"', '"say ""hi"""'],
    ['', '""'],
  ])('%j is written %j', (value, cell) => {
    expect(textCell(value)).toBe(cell);
  });
});
