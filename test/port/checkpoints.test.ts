import { SqliteCheckpoints } from '../../db/journal-checkpoints.ts';
import { MemoryJournal, SqliteJournal } from '../../db/journal-store.ts';
import { MemoryCheckpoints } from '../../db/memory/checkpoints.ts';
import type { Checkpoints, StoredCheckpoint } from '../../db/port/checkpoints.ts';
import type { OpenDatabase } from '../../db/open.ts';
import { cleanUpDatabases, fakeClock, openTempDatabase } from '../support/db-journals.ts';
import { type CheckpointsEnv, checkpointsCases } from './checkpoints.contract.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';

const memory: ContractBackend<CheckpointsEnv> = {
  name: 'memory',
  make: () => {
    const journal = new MemoryJournal(fakeClock());
    const store = new MemoryCheckpoints(journal);
    return { store, other: () => store, journal };
  },
};

/** Each connection is a database connection of its own on one file, as two processes have. */
const sqliteOn = (connect: (database: OpenDatabase) => Checkpoints): ContractBackend<CheckpointsEnv> => ({
  name: 'SQLite',
  make: () => {
    const opened = openTempDatabase();
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    return { store: connect(openTempDatabase(opened.file)), other: () => connect(openTempDatabase(opened.file)), journal };
  },
  cleanUp: cleanUpDatabases,
});

runContract('checkpoints', checkpointsCases, [memory, sqliteOn((database) => new SqliteCheckpoints(database.db))]);

/**
 * A planted bad store: it reads the newest checkpoint, then writes, outside one transaction, as a
 * store over the network does when it forgets to lock; two connections then both read the same newest.
 */
class ReadThenWriteCheckpoints extends SqliteCheckpoints {
  constructor(private readonly database: OpenDatabase) {
    super(database.db);
  }

  override async add(checkpoint: Omit<StoredCheckpoint, 'id'>): Promise<boolean> {
    const newest = await this.latest();
    if (newest !== null && newest.epoch === checkpoint.epoch && newest.size >= checkpoint.size) return false;
    await new Promise((resolve) => setImmediate(resolve));
    this.database.sqlite
      .prepare('INSERT INTO journal_checkpoints (epoch, size, head, note, signed_at_ms) VALUES (?, ?, ?, ?, ?)')
      .run(checkpoint.epoch, checkpoint.size, checkpoint.head, checkpoint.note, checkpoint.signedAtMs);
    return true;
  }
}

plantedFails('checkpoints', checkpointsCases, ['checkpoints added from two connections at once never go backwards'], {
  ...sqliteOn((database) => new ReadThenWriteCheckpoints(database)),
  name: 'a store that checks outside its transaction',
});
