import { describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { DerivedListOptions } from '../../db/port/derived.ts';
import { aboutRow, OUTBOX_ABOUT_VIEW } from '../../server/outbox/table.ts';
import { OutboxHeld } from '../../server/outbox/view-held.ts';
import { OutboxReads } from '../../server/outbox/view-reads.ts';
import { effectIdOf } from '../support/db-journals.ts';

// An item's messages are found through the about index: rows keyed by the item and the seq of each
// message. The read pages through the item's own rows, however many, and reads little past them:
// a page of 4 first, doubled while every row it read was the item's (so never more past them than
// the larger of 4 and their number).

/** Tables that count the rows each list answers. */
class CountingTables extends MemoryDerivedTables {
  rowsRead = 0;
  override async list(view: string, options: DerivedListOptions) {
    const rows = await super.list(view, options);
    this.rowsRead += rows.length;
    return rows;
  }
}

describe("the outbox's about index", () => {
  it("answers every message of an item in order, 1 or 100, reading past the item's rows no more than it has, or 4", async () => {
    const tables = new CountingTables();
    const counts = [3, 1, 100, 40, 2];
    const items = counts.map((_, i) => effectIdOf(i + 1));
    const changes = items.flatMap((item, i) =>
      Array.from({ length: counts[i]! }, (_, n) => {
        const row = aboutRow(item, 1_000 * (i + 1) + n, `m-${i}-${n}`);
        return { view: OUTBOX_ABOUT_VIEW, key: row.key, row };
      }),
    );
    await tables.advance({ fromSeq: 0, to: { seq: 1, globalHash: 'g', size: 1, version: 'v' }, changes });
    const reads = new OutboxReads(tables, new OutboxHeld(), () => []);
    for (const [i, item] of items.entries()) {
      tables.rowsRead = 0;
      expect(await reads.aboutIds(item)).toEqual(Array.from({ length: counts[i]! }, (_, n) => `m-${i}-${n}`));
      expect(tables.rowsRead).toBeLessThanOrEqual(counts[i]! + Math.max(4, counts[i]!));
    }
    expect(await reads.aboutIds(effectIdOf(99))).toEqual([]);
  });
});
