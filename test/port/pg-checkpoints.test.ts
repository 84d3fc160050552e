import { afterEach, beforeAll, describe } from 'vitest';
import { PgCheckpoints } from '../../db/pg/checkpoints.ts';
import { PgJournal } from '../../db/pg/journal.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import type { StoredCheckpoint } from '../../db/port/checkpoints.ts';
import { fakeClock } from '../support/db-journals.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { type CheckpointsEnv, checkpointsCases } from './checkpoints.contract.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';

// The checkpoints contract on PostgreSQL: each case on a fresh copy of one migrated database,
// through Interlock's own role; another connection is another pool, as another server has.

const available = postgresOrSkip('the PostgreSQL checkpoints contract (test/port/pg-checkpoints.test.ts)');

type Pool = ReturnType<typeof openPgPool>;

let template: PgDatabase;
const made: PgDatabase[] = [];
const pools: Pool[] = [];

function poolOn(database: PgDatabase): Pool {
  const pool = openPgPool({ url: database.appUrl, max: 4 });
  pools.push(pool);
  return pool;
}

/** The backend, its stores made by `connect` on a fresh database. */
const pgOn = (name: string, connect: (pool: Pool) => PgCheckpoints): ContractBackend<CheckpointsEnv> => ({
  name,
  make: async () => {
    const database = await copyPgDatabase(template, 'checkpoints_case');
    made.push(database);
    return { store: connect(poolOn(database)), other: () => connect(poolOn(database)), journal: new PgJournal({ pool: poolOn(database), ...fakeClock() }) };
  },
  cleanUp: async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
    for (const database of made.splice(0)) await dropPgDatabase(database);
  },
});

/** A planted bad store: it reads the newest checkpoint, then writes, with no lock and no transaction between. */
class ReadThenWriteCheckpoints extends PgCheckpoints {
  constructor(private readonly pool: Pool) {
    super({ pool });
  }

  override async add(checkpoint: Omit<StoredCheckpoint, 'id'>): Promise<boolean> {
    const newest = await this.latest();
    if (newest !== null && newest.epoch === checkpoint.epoch && newest.size >= checkpoint.size) return false;
    const id = (await this.pool.query<{ id: number }>('SELECT coalesce(max(id), 0)::int8 + 1 AS id FROM journal_checkpoints')).rows[0]!.id;
    await this.pool.query('INSERT INTO journal_checkpoints (id, epoch, size, head, note, signed_at_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING', [
      id,
      checkpoint.epoch,
      checkpoint.size,
      checkpoint.head,
      checkpoint.note,
      checkpoint.signedAtMs,
    ]);
    return true;
  }
}

describe.skipIf(!available)('PostgreSQL', () => {
  beforeAll(async () => {
    template = await freshPgDatabase('checkpoints_template');
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
  });
  runContract('checkpoints', checkpointsCases, [pgOn('PostgreSQL', (pool) => new PgCheckpoints({ pool }))]);
  plantedFails('checkpoints', checkpointsCases, ['checkpoints added from two connections at once never go backwards'], pgOn('a PostgreSQL store that checks outside its transaction', (pool) => new ReadThenWriteCheckpoints(pool)));
});
