import { StoreBusyError, StoreClosedError } from '../../db/port/errors.ts';
import { JournalCorruptError } from '../journal/store.ts';

/**
 * The views cannot be trusted: the journal failed a check (a stored entry does not match its hash
 * or shape). Nothing is shown or decided from them until an operator restarts Interlock.
 */
export class JournalUnavailableError extends Error {
  readonly code = 'journal_unavailable';

  constructor(readonly corrupt: JournalCorruptError) {
    super(`the journal failed a check at seq ${corrupt.seq} (effect ${corrupt.effectId}); Interlock serves nothing from it until an operator restarts it`);
  }
}

/** True for an error that means the journal is corrupt or already known to be: never to be swallowed. */
export function isJournalFailure(error: unknown): error is JournalCorruptError | JournalUnavailableError {
  return error instanceof JournalCorruptError || error instanceof JournalUnavailableError;
}

/** The storage was busy (another process held its lock past the wait): worth a retry, not yet a failure. */
export function isBusy(error: unknown): boolean {
  return error instanceof StoreBusyError;
}

/** The storage was closed under the call (the server stopping): nothing was done. */
export function isClosed(error: unknown): boolean {
  return error instanceof StoreClosedError;
}
