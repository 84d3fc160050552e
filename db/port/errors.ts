/**
 * The storage is busy: another process held its lock past the wait. Worth a retry, not yet a
 * failure; the store raises it in place of its engine's own error, so callers know no engine.
 */
export class StoreBusyError extends Error {
  readonly code = 'store_busy';
}

/** The storage was closed (the server is stopping): the call was not carried out. */
export class StoreClosedError extends Error {
  readonly code = 'store_closed';
}

/**
 * The connection to the database was lost while a write was committing: it may or may not be in
 * the journal. Nothing was retried; read the journal again (the effect's chain) before acting on it.
 */
export class StoreCommitUnknownError extends Error {
  readonly code = 'store_commit_unknown';
}

/** A write asked of a storage opened read-only (the offline check's): nothing was written. */
export class StoreReadOnlyError extends Error {
  readonly code = 'store_read_only';
}

/** A derived table's write or list asked with what no store can keep or answer: nothing was written. */
export class DerivedInputError extends Error {
  readonly code = 'derived_input_invalid';
}

/**
 * What this storage does not do (a file copy of a PostgreSQL database, sealing a journal an
 * earlier Interlock wrote): nothing was done, and the message says what to use instead.
 */
export class StoreUnsupportedError extends Error {
  readonly code = 'store_unsupported';
}

/**
 * The database could not be reached while the server ran (it restarted, or the network to it
 * failed): the call's connection was refused or lost before any commit, so nothing of it was
 * written. Worth a retry once the database is back; a commit whose answer was lost is
 * StoreCommitUnknownError instead.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'store_unavailable';
}

/** The database could not be reached or logged into when the storage was opened: nothing was read or written. */
export class StoreUnreachableError extends Error {
  readonly code = 'store_unreachable';
}

export { SealRefusedError } from '../journal-seals.ts';
