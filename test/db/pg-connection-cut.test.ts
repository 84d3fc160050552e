import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Head, PgJournal } from '../../db/pg/journal.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { StoreBusyError } from '../../db/port/errors.ts';
import { effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import { dropPgDatabase, freshPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';
import { tcpProxy } from '../support/tcp-proxy.ts';

// A server whose network goes silent (no reset, no FIN: a cable, a NAT table, a frozen VM) while
// it holds the head row's lock. PostgreSQL then waits for that session's next statement for as
// long as TCP keeps the connection, hours by default, and every writer of every other server
// queues behind the lock, refused as busy. The pool's connections end such a transaction after
// `idleInTransactionTimeoutMs` instead.

const available = postgresOrSkip('the PostgreSQL silent connection test (test/db/pg-connection-cut.test.ts)');

/** Goes silent (its proxy does) right after it took the head row's lock, once. */
class SilencedUnderTheLock extends PgJournal {
  silence: (() => void) | null = null;

  protected override async lockHead(client: Parameters<PgJournal['lockHead']>[0]): Promise<Head> {
    const head = await super.lockHead(client);
    this.silence?.();
    this.silence = null;
    return head;
  }
}

describe.skipIf(!available)('a server whose connection goes silent while it holds the head row', () => {
  let database: PgDatabase;
  beforeAll(async () => {
    database = await freshPgDatabase('connection_cut');
  });
  afterAll(async () => {
    if (database !== undefined) await dropPgDatabase(database);
  });

  it('blocks the other servers only until its idle transaction is ended, then they write', async () => {
    const cluster = await postgresCluster();
    const proxy = await tcpProxy(cluster.port);
    const viaProxy = openPgPool({ url: database.appUrl.replace(`:${cluster.port}/`, `:${proxy.port}/`), max: 1, idleInTransactionTimeoutMs: 1_000 });
    const other = openPgPool({ url: database.appUrl, max: 1, lockTimeoutMs: 500 });
    try {
      const silenced = new SilencedUnderTheLock({ pool: viaProxy, ...fakeClock() });
      const holding = new Promise<void>((resolve) => {
        silenced.silence = () => {
          proxy.silence();
          resolve();
        };
      });
      const stuck = silenced.append('PROPOSED', effectIdOf(1), fields('PROPOSED')).catch((error: unknown) => error);
      await holding;
      // Another server's write: refused as busy while the lock is held, until it is not.
      const journal = new PgJournal({ pool: other, ...fakeClock() });
      const startedMs = Date.now();
      let wrote = false;
      while (!wrote && Date.now() - startedMs < 8_000) {
        try {
          await journal.append('PROPOSED', effectIdOf(2), fields('PROPOSED'));
          wrote = true;
        } catch (error) {
          if (!(error instanceof StoreBusyError)) throw error;
        }
      }
      expect(wrote, 'the other server could not write for 8 s').toBe(true);
      expect(Date.now() - startedMs).toBeLessThan(4_000);
      proxy.close();
      await stuck;
    } finally {
      proxy.close();
      await Promise.race([Promise.all([viaProxy.end(), other.end()]), new Promise((resolve) => setTimeout(resolve, 2_000))]);
    }
  }, 30_000);
});
