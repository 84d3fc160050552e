import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Head, PgJournal, type PgTx } from '../../db/pg/journal.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { StoreCommitUnknownError } from '../../db/port/errors.ts';
import { effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import { dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';

// A write whose connection is lost while it commits may or may not be in the journal. Running it
// again could write it twice (a second PROPOSED, a second refund asked), so the PostgreSQL journal
// runs nothing again: each write of the batch is refused with StoreCommitUnknownError, for its
// caller to read the chain again before acting.

const available = postgresOrSkip('the PostgreSQL commit-outcome test (test/db/pg-commit-unknown.test.ts)');

/** Closes its connection's socket, once, right before COMMIT is sent, as a network cut would. */
class LosingTheConnectionAtCommit extends PgJournal {
  cuts = 1;

  protected override async moveHead(tx: PgTx, from: Head): Promise<void> {
    await super.moveHead(tx, from);
    if (this.cuts === 0) return;
    this.cuts -= 1;
    (tx.client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  }
}

describe.skipIf(!available)('a PostgreSQL write whose connection is lost during COMMIT', () => {
  let database: PgDatabase;
  const pools: Array<ReturnType<typeof openPgPool>> = [];
  const pool = () => {
    pools.push(openPgPool({ url: database.appUrl, max: 2 }));
    return pools.at(-1)!;
  };
  beforeAll(async () => {
    database = await freshPgDatabase('commit_unknown');
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    if (database !== undefined) await dropPgDatabase(database);
  });

  it('is refused with StoreCommitUnknownError, every write of its batch, and none is run again', async () => {
    const journal = new LosingTheConnectionAtCommit({ pool: pool(), ...fakeClock() });
    const results = await Promise.allSettled([1, 2, 3].map((n) => journal.append('PROPOSED', effectIdOf(n), fields('PROPOSED', { n }))));
    expect(results.map((r) => (r.status === 'rejected' ? r.reason.constructor.name : r.status))).toEqual([1, 2, 3].map(() => 'StoreCommitUnknownError'));
    expect(results.every((r) => r.status === 'rejected' && r.reason instanceof StoreCommitUnknownError)).toBe(true);
    expect(journal.commitStats).toMatchObject({ batches: 1, ops: 3, retriedBatches: 0, unknownBatches: 1 });
    // The server rolled the cut transaction back; nothing ran again, so nothing is there twice.
    const reader = new PgJournal({ pool: pool(), ...fakeClock() });
    expect(await reader.head()).toBeNull();
    // The broken connection left the pool: the next write goes through on a new one.
    await journal.append('PROPOSED', effectIdOf(1), fields('PROPOSED', { n: 1 }));
    expect((await reader.scan(0, 10)).map((s) => s.seq)).toEqual([1]);
  });
});
