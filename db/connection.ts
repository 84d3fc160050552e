import Database from 'better-sqlite3';
import { AsyncLock } from './async-lock.ts';
import { StoreBusyError, StoreClosedError } from './port/errors.ts';

// One SQLite connection is shared by every store over it (the journal, sessions, grants,
// checkpoints). Their transactions are opened and closed by hand around steps that may yield, so
// each use of the connection takes its lock, and the errors it raises are the port's.

/**
 * The port's error for what SQLite raised: a lock another process held past the busy timeout
 * becomes StoreBusyError (worth a retry), so no caller needs to know SQLite's codes.
 */
export function portErrorOf(error: unknown): unknown {
  if (error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY')) return new StoreBusyError(error.message, { cause: error });
  return error;
}

/** Refuse, with the port's error, work that reaches a connection the storage has closed. */
export function refuseClosed(client: Database.Database): void {
  if (!client.open) throw new StoreClosedError('the storage is closed');
}

const connectionLocks = new WeakMap<Database.Database, AsyncLock>();

/**
 * The lock of one connection: its transactions are opened and closed by hand around steps that may
 * yield, so every journal over the connection takes this lock for each transaction and each read,
 * and none of them runs a statement inside another's open transaction.
 */
export function connectionLock(client: Database.Database): AsyncLock {
  let lock = connectionLocks.get(client);
  if (lock === undefined) {
    lock = new AsyncLock();
    connectionLocks.set(client, lock);
  }
  return lock;
}

/**
 * Run `fn` on the connection under its lock, as every store over it does: never inside another's
 * transaction left open across an await, refused with StoreClosedError once the storage closed,
 * and a busy lock answered with StoreBusyError.
 */
export async function onConnection<T>(client: Database.Database, fn: () => Promise<T>): Promise<T> {
  try {
    return await connectionLock(client).run(async () => {
      refuseClosed(client);
      return await fn();
    });
  } catch (error) {
    throw portErrorOf(error);
  }
}
