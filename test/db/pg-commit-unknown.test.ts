import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Head, PgJournal, type PgTx } from '../../db/pg/journal.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { StoreCommitUnknownError } from '../../db/port/errors.ts';
import { effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import { dropPgDatabase, freshPgDatabase, type PgCluster, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';

// A write whose connection is lost while it commits may or may not be in the journal. Running it
// again could write it twice (a second PROPOSED, a second refund asked), so the PostgreSQL journal
// runs nothing again: each write of the batch is refused with StoreCommitUnknownError, for its
// caller to read the chain again before acting.

const available = postgresOrSkip('the PostgreSQL commit-outcome test (test/db/pg-commit-unknown.test.ts)');

type Pool = ReturnType<typeof openPgPool>;

/** A fresh database for one describe block, made before its cases and dropped after, with the pools opened on it. */
function databaseForBlock(label: string): { database(): PgDatabase; pool(): Pool } {
  let database: PgDatabase | undefined;
  const pools: Pool[] = [];
  beforeAll(async () => {
    database = await freshPgDatabase(label);
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    if (database !== undefined) await dropPgDatabase(database);
  });
  return {
    database: () => database!,
    pool: () => {
      pools.push(openPgPool({ url: database!.appUrl, max: 2 }));
      return pools.at(-1)!;
    },
  };
}

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
  const { pool } = databaseForBlock('commit_unknown');

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

/**
 * A COMMIT that waits for a synchronous standby has committed on the primary already; if its
 * connection is terminated then (a failover, an operator's pg_terminate_backend), the server
 * answers COMMIT with FATAL 57P01 after a WARNING that "the transaction has already committed
 * locally". The error is the server's own, but it does not mean the write was rolled back.
 */
describe.skipIf(!available)('a PostgreSQL write whose COMMIT is answered FATAL while it waits for a synchronous standby', () => {
  const { database, pool } = databaseForBlock('commit_fatal');

  /** The backend pid of the app's connection waiting in SyncRep, once it waits there. */
  const waitingForStandby = async (cluster: PgCluster): Promise<number> => {
    for (let tries = 0; tries < 200; tries++) {
      const pid = (await cluster.psql('postgres', `SELECT pid FROM pg_stat_activity WHERE datname = '${database().name}' AND wait_event = 'SyncRep'`)).trim();
      if (pid !== '') return Number(pid);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('no connection of the app came to wait for the standby');
  };

  it('is refused with StoreCommitUnknownError, and runs nothing again: the entry is in the journal once', async () => {
    const cluster = await postgresCluster();
    const journal = new PgJournal({ pool: pool(), ...fakeClock() });
    let outcome: unknown;
    try {
      // The setting is the cluster's (it cannot be set per database); it is taken back below.
      await cluster.psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
      await cluster.psql('postgres', 'SELECT pg_reload_conf()');
      const pending = journal.append('PROPOSED', effectIdOf(7), fields('PROPOSED', { n: 7 })).then(
        (entry) => entry,
        (error: unknown) => error,
      );
      const pid = await waitingForStandby(cluster);
      // Taken back before the kill, applied after it: the kill lands on a COMMIT that still waits.
      await cluster.psql('postgres', 'ALTER SYSTEM RESET synchronous_standby_names');
      await cluster.psql('postgres', `SELECT pg_terminate_backend(${pid})`);
      await cluster.psql('postgres', 'SELECT pg_reload_conf()');
      outcome = await pending;
    } finally {
      await cluster.psql('postgres', 'ALTER SYSTEM RESET synchronous_standby_names');
      await cluster.psql('postgres', 'SELECT pg_reload_conf()');
    }
    expect(outcome).toBeInstanceOf(StoreCommitUnknownError);
    expect(journal.commitStats).toMatchObject({ retriedBatches: 0, unknownBatches: 1 });
    // The terminated COMMIT had committed on the primary: the entry is there, once.
    const reader = new PgJournal({ pool: pool(), ...fakeClock() });
    expect((await reader.entries(effectIdOf(7))).map((e) => e.kind)).toEqual(['PROPOSED']);
  });
});

/**
 * PostgreSQL answers COMMIT of a transaction a failed statement aborted with the tag ROLLBACK and
 * no error. Interlock's own steps never swallow a statement's error, but if one ever did (a step
 * added later, a driver that resolves where it rejected), the writes would be lost while their
 * callers were told they were in the journal.
 */
class SwallowingAFailedStatement extends PgJournal {
  protected override async moveHead(tx: PgTx, from: Head): Promise<void> {
    await super.moveHead(tx, from);
    await tx.client.query('SELECT 1 / 0').catch(() => {});
  }
}

describe.skipIf(!available)('a PostgreSQL write whose transaction was aborted before COMMIT', () => {
  const { pool } = databaseForBlock('commit_aborted');

  it('is refused, never answered as written: COMMIT answered ROLLBACK is not a commit', async () => {
    const shared = pool();
    const journal = new SwallowingAFailedStatement({ pool: shared, ...fakeClock() });
    const outcome = await journal.append('PROPOSED', effectIdOf(9), fields('PROPOSED')).then(
      () => 'told it was written',
      (error: Error) => error.message,
    );
    expect(await new PgJournal({ pool: shared, ...fakeClock() }).head()).toBeNull();
    expect(outcome).toMatch(/rolled back/);
  });
});
