import { moveDigestBy } from '../../db/derived-digest.ts';
import { SqliteDerivedTables, type ViewSum } from '../../db/derived-store.ts';
import { pagedSnapshot } from '../../db/derived-snapshot.ts';
import { derivedCursor } from '../../db/schema.ts';
import type { DerivedBatch, DerivedSnapshot } from '../../db/port/derived.ts';

// Stores of the derived tables planted with the bugs their contract exists to catch, as a store
// over another database could have them. derived.test.ts shows that the contract's cases fail on each.

/** Moves the cursor to the batch's end wherever it stands: a batch from any seq applies. */
export class SqliteNotCheckingTheCursor extends SqliteDerivedTables {
  protected override moveCursor(batch: DerivedBatch): boolean {
    const at = { seq: batch.to.seq, globalHash: batch.to.globalHash, size: batch.to.size, version: batch.to.version };
    this.db
      .insert(derivedCursor)
      .values({ id: 1, ...at })
      .onConflictDoUpdate({ target: derivedCursor.id, set: at })
      .run();
    return true;
  }
}

/** Adds each new row's hash to its view's digest but never takes the old row's off, on a replace or a removal. */
export class SqliteNotSubtracting extends SqliteDerivedTables {
  protected override moveSum(sum: ViewSum, added: bigint | null, removed: bigint | null): ViewSum {
    return { sum: moveDigestBy(sum.sum, added, null), rows: sum.rows + (added === null ? 0 : 1) - (removed === null ? 0 : 1) };
  }
}

/**
 * Reads the cursor in a call of its own, then writes the batch in a transaction that does not
 * read it again: alone it behaves; two handles interleaved both pass the check and both write.
 */
export class SqliteCheckingOutside extends SqliteNotCheckingTheCursor {
  override async advance(batch: DerivedBatch): Promise<boolean> {
    if (((await this.cursor())?.seq ?? 0) !== batch.fromSeq) return false;
    // The way back from the database, as over a network.
    await new Promise((resolve) => setImmediate(resolve));
    return super.advance(batch);
  }
}

/** Reads a snapshot's pages on the store's own connection, outside any transaction: each page as the tables stand when it is read. */
export class SqliteSnapshotReadingLive extends SqliteDerivedTables {
  override async snapshot(): Promise<DerivedSnapshot> {
    return pagedSnapshot(this.db.$client, () => {});
  }
}
