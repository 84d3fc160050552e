import { afterAll, beforeAll, describe } from 'vitest';
import { openPgPool, type PgPool } from '../../db/pg/pool.ts';
import { PG_LISTEN_APPLICATION_NAME, type PgListenClient, PgSignals, type PgSignalsOptions } from '../../db/pg/signals.ts';
import type { Signals } from '../../db/port/signals.ts';
import { dropPgDatabase, freshPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { droppableSignalsCases, type SignalsEnv } from './signals.contract.ts';

// The signals contract on PostgreSQL: each server is a pool of its own and a listening connection
// of its own, through Interlock's role, on one migrated database. The listening connections are
// cut as an operator (or a pooler restarting) would: pg_terminate_backend, run by the superuser.

const available = postgresOrSkip('the PostgreSQL signals contract (test/port/pg-signals.test.ts)');

/** A planted bad store: after its listening connection is made again, it listens on no channel. */
class ListensOnceSignals extends PgSignals {
  protected override async listen(client: PgListenClient, again: boolean): Promise<void> {
    if (!again) await super.listen(client, again);
  }
}

describe.skipIf(!available)('PostgreSQL', () => {
  let database: PgDatabase | undefined;
  beforeAll(async () => {
    database = await freshPgDatabase('signals');
  });
  afterAll(async () => {
    if (database !== undefined) await dropPgDatabase(database);
  });
  const opened: Array<{ signals: Signals; pool: PgPool }> = [];

  /** A backend whose servers each open `make` over a pool of their own. */
  const pgOn = (name: string, make: (options: PgSignalsOptions) => PgSignals): ContractBackend<SignalsEnv> => ({
    name,
    make: () => {
      const at = database!;
      const server = () => {
        const pool = openPgPool({ url: at.appUrl, max: 2 });
        const signals = make({ pool, listenUrl: at.appUrl, retryFirstMs: 20, retryMaxMs: 200 });
        opened.push({ signals, pool });
        return signals;
      };
      const cut = async () => {
        const cluster = await postgresCluster();
        await cluster.psql(at.name, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '${PG_LISTEN_APPLICATION_NAME}' AND datname = current_database()`);
      };
      return { store: server(), other: server, cut };
    },
    cleanUp: async () => {
      for (const { signals, pool } of opened.splice(0)) {
        await signals.close();
        await pool.end();
      }
    },
  });

  runContract('signals', droppableSignalsCases, [pgOn('PostgreSQL', (options) => new PgSignals(options))]);
  plantedFails(
    'signals',
    droppableSignalsCases,
    ['after the listening connection is cut, it is made again, the reconnect hook is called, and signals are heard again'],
    pgOn('a PostgreSQL store that does not listen again after its connection was made again', (options) => new ListensOnceSignals(options)),
  );
});
