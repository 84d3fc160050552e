import type { PgClient, PgPool } from '../../db/pg/pool.ts';
import { moveDigestBy } from '../../db/derived-digest.ts';
import type { ViewSum } from '../../db/derived-store.ts';
import { PgDerivedTables } from '../../db/pg/derived.ts';
import { pagedPgSnapshot } from '../../db/pg/derived-snapshot.ts';
import type { DerivedBatch, DerivedSnapshot } from '../../db/port/derived.ts';

// PostgreSQL stores of the derived tables planted with the bugs their contract exists to catch
// (as planted-derived.ts are on SQLite). pg-derived.test.ts shows that the contract's cases fail on each.

/** Moves the cursor to the batch's end wherever it stands: a batch from any seq applies. */
export class PgNotCheckingTheCursor extends PgDerivedTables {
  protected override async moveCursor(client: PgClient, batch: DerivedBatch): Promise<boolean> {
    const { seq, globalHash, size, version } = batch.to;
    await client.query(
      `INSERT INTO derived_cursor (id, seq, global_hash, size, version) VALUES (1, $1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, global_hash = excluded.global_hash, size = excluded.size, version = excluded.version`,
      [seq, globalHash, size, version],
    );
    return true;
  }
}

/** Adds each new row's hash to its view's digest but never takes the old row's off, on a replace or a removal. */
export class PgNotSubtracting extends PgDerivedTables {
  protected override moveSum(sum: ViewSum, added: bigint | null, removed: bigint | null): ViewSum {
    return { sum: moveDigestBy(sum.sum, added, null), rows: sum.rows + (added === null ? 0 : 1) - (removed === null ? 0 : 1) };
  }
}

/**
 * Advances of this process between their check and their write: each waits for another to have
 * checked too, at most `MEET_MS`, so two handles' checks always meet however slow a connection is.
 */
const checked: Array<() => void> = [];
const MEET_MS = 2_000;

function meetAnother(): Promise<void> {
  const other = checked.shift();
  if (other !== undefined) {
    other();
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      checked.splice(checked.indexOf(done), 1);
      resolve();
    }, MEET_MS);
    checked.push(done);
  });
}

/**
 * Checks the cursor with a read of its own, then writes unchecked: two handles that both check
 * before either writes both apply. In one process, each advance waits between its check and its
 * write for another handle's check (meetAnother); across processes, which cannot meet so, it
 * pauses `pauseMs`.
 */
export class PgCheckingOutside extends PgNotCheckingTheCursor {
  readonly #pauseMs: number | undefined;

  constructor(options: { pool: PgPool; pauseMs?: number }) {
    super(options);
    this.#pauseMs = options.pauseMs;
  }

  override async advance(batch: DerivedBatch): Promise<boolean> {
    if (((await this.cursor())?.seq ?? 0) !== batch.fromSeq) return false;
    await (this.#pauseMs === undefined ? meetAnother() : new Promise((resolve) => setTimeout(resolve, this.#pauseMs)));
    return super.advance(batch);
  }
}

/** Reads a snapshot's pages on the pool, outside any transaction: each page as the tables stand when it is read. */
export class PgSnapshotReadingLive extends PgDerivedTables {
  override snapshot(): Promise<DerivedSnapshot> {
    return pagedPgSnapshot(async (text, values) => (await this.pool.query(text, values)).rows, () => {});
  }
}
