import type { NewEntryRow } from '../../db/journal-rules.ts';
import type { EntryRow } from '../../db/schema.ts';
import { type Head, PgJournal, type PgTx } from '../../db/pg/journal.ts';
import { run } from '../../db/pg/journal-queries.ts';

// PostgreSQL journals for the tail test (pg-journal-tail.test.ts): the real one made slow under its
// lock, and one planted with the bug that test exists to catch.

/** The sequence the planted store takes seq from; the test makes it as the superuser. */
export const PLANTED_SEQUENCE = 'planted_entry_seq';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The real journal, holding each row it writes a random while (up to `holdMsMax`) before going on: a slow writer under the lock. */
export class SlowPgJournal extends PgJournal {
  readonly #holdMsMax: number;

  constructor(options: ConstructorParameters<typeof PgJournal>[0] & { holdMsMax: number }) {
    super(options);
    this.#holdMsMax = options.holdMsMax;
  }

  protected override async insertRow(tx: PgTx, row: NewEntryRow): Promise<number> {
    const seq = await super.insertRow(tx, row);
    await sleep(Math.random() * this.#holdMsMax);
    return seq;
  }
}

/**
 * The bug of Marten's and Eventuous's event-skipping releases: seq comes from a sequence, taken
 * outside any lock, and no write waits for another. A write that took seq 5 and commits after the
 * one that took 6 becomes visible after it, so a reader already past 6 never reads 5.
 */
export class PgSeqFromSequence extends SlowPgJournal {
  protected override async lockHead(client: PgTx['client']): Promise<Head> {
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    const [seq, globalHash, size] = (await run(client, 'head')).rows[0] as [number, string | null, number];
    return { seq, globalHash, size };
  }

  protected override async takeSeq(tx: PgTx): Promise<number> {
    const result = await tx.client.query<{ seq: number }>(`SELECT nextval('${PLANTED_SEQUENCE}') AS seq`);
    tx.rowSeq = Number(result.rows[0]!.seq);
    return tx.rowSeq;
  }

  protected override async moveHead(): Promise<void> {
    // The head stays where it was: without its lock, writers would only overwrite each other's.
  }
}

/**
 * A batch whose writes each read the journal as the lock found it, blind to what the writes before
 * them in the same batch wrote: two dispatches of one effect, or two on one payment, made at once
 * through one handle would both be written.
 */
export class PgBlindToItsBatch extends PgJournal {
  protected override async chainRows(tx: PgTx, effectId: string): Promise<EntryRow[]> {
    return blind(tx, () => super.chainRows(tx, effectId));
  }

  protected override async reservedSince(tx: PgTx, key: string, afterSeq: number, effectId: string): Promise<boolean> {
    return blind(tx, () => super.reservedSince(tx, key, afterSeq, effectId));
  }
}

async function blind<T>(tx: PgTx, read: () => Promise<T>): Promise<T> {
  const rows = tx.rows;
  tx.rows = [];
  try {
    return await read();
  } finally {
    tx.rows = rows;
  }
}
