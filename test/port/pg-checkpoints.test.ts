import { describe } from 'vitest';
import { PgCheckpoints } from '../../db/pg/checkpoints.ts';
import { PgJournal } from '../../db/pg/journal.ts';
import type { PgPool } from '../../db/pg/pool.ts';
import type { StoredCheckpoint } from '../../db/port/checkpoints.ts';
import { fakeClock } from '../support/db-journals.ts';
import { postgresOrSkip } from '../support/postgres.ts';
import { type CheckpointsEnv, checkpointsCases } from './checkpoints.contract.ts';
import { plantedFails, runContract } from './contract.ts';
import { pgContractBackends } from './pg-backends.ts';

// The checkpoints contract on PostgreSQL: each case on a fresh copy of one migrated database,
// through Interlock's own role; another connection is another pool, as another server has.

const available = postgresOrSkip('the PostgreSQL checkpoints contract (test/port/pg-checkpoints.test.ts)');

/** A planted bad store: it reads the newest checkpoint, then writes, with no lock and no transaction between. */
class ReadThenWriteCheckpoints extends PgCheckpoints {
  constructor(private readonly pool: PgPool) {
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
  const backend = pgContractBackends('checkpoints');
  /** The backend, its stores made by `connect`, each on a pool of its own, beside a journal on another. */
  const pgOn = (name: string, connect: (pool: PgPool) => PgCheckpoints) =>
    backend<CheckpointsEnv>(name, (openPool) => ({ store: connect(openPool()), other: () => connect(openPool()), journal: new PgJournal({ pool: openPool(), ...fakeClock() }) }));
  runContract('checkpoints', checkpointsCases, [pgOn('PostgreSQL', (pool) => new PgCheckpoints({ pool }))]);
  plantedFails('checkpoints', checkpointsCases, ['checkpoints added from two connections at once never go backwards'], pgOn('a PostgreSQL store that checks outside its transaction', (pool) => new ReadThenWriteCheckpoints(pool)));
});
