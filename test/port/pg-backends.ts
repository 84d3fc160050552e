import { afterAll, beforeAll } from 'vitest';
import { openPgPool, type PgPool, type PgPoolOptions } from '../../db/pg/pool.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase } from '../support/postgres.ts';
import type { ContractBackend } from './contract.ts';

// A PostgreSQL store's contract backends: the suite migrates one template database, and each case
// runs on a fresh copy of it through Interlock's own role. Another connection is another pool, as
// another server has. After each case its pools are ended and its copy dropped.

/** A new pool on the case's database, as another server would open, with the lock wait given. */
export type PoolOpener = (options?: Pick<PgPoolOptions, 'lockTimeoutMs'>) => PgPool;

/** A backend named `name` whose environment `envOf` makes from pools on the case's database. */
export type PgBackendMaker = <Env>(name: string, envOf: (openPool: PoolOpener) => Env) => ContractBackend<Env>;

/**
 * Contract backends on copies of one template database, both named after `label`. Call it inside
 * the suite's describe block: the template is made before its first case and dropped after its last.
 */
export function pgContractBackends(label: string): PgBackendMaker {
  let template: PgDatabase | undefined;
  const made: PgDatabase[] = [];
  const pools: PgPool[] = [];
  beforeAll(async () => {
    template = await freshPgDatabase(`${label}_template`);
  });
  afterAll(async () => {
    if (template !== undefined) await dropPgDatabase(template);
  });
  return (name, envOf) => ({
    name,
    make: async () => {
      if (template === undefined) throw new Error(`the ${label} template database was not made`);
      const database = await copyPgDatabase(template, `${label}_case`);
      made.push(database);
      return envOf((options = {}) => {
        const pool = openPgPool({ url: database.appUrl, max: 4, ...options });
        pools.push(pool);
        return pool;
      });
    },
    cleanUp: async () => {
      await Promise.all(pools.splice(0).map((pool) => pool.end()));
      for (const database of made.splice(0)) await dropPgDatabase(database);
    },
  });
}
