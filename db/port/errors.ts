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

export { SealRefusedError } from '../journal-seals.ts';
