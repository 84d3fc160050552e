import { StoreBusyError, StoreClosedError, StoreUnavailableError } from '../../db/port/errors.ts';
import { DerivedMismatchError } from '../integrity/derived-check.ts';
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

/** The storage's database could not be reached (restarting, or cut off): nothing was done, worth a retry. */
export function isUnavailable(error: unknown): boolean {
  return error instanceof StoreUnavailableError;
}

/** The storage was closed under the call (the server stopping): nothing was done. */
export function isClosed(error: unknown): boolean {
  return error instanceof StoreClosedError;
}

/**
 * The one fatal line the views log when they fail: a derived table that differs from the journal
 * names its view, the seq and both digests, and the rebuild it needs; anything else, the journal.
 */
export function failureLine(corrupt: JournalCorruptError): { fields: object; message: string } {
  if (corrupt instanceof DerivedMismatchError) {
    return {
      fields: { code: 'derived_mismatch', view: corrupt.view, seq: corrupt.seq, effectId: corrupt.effectId, recorded: corrupt.recorded, recomputed: corrupt.recomputed },
      message: `${corrupt.message}; views, readiness and refunds answer 503 journal_unavailable until an operator rebuilds the derived tables (npm run rebuild-views) and restarts Interlock`,
    };
  }
  return {
    fields: { code: corrupt.code, seq: corrupt.seq, effectId: corrupt.effectId },
    message: `journal corrupt at seq ${corrupt.seq}, effect ${corrupt.effectId}: ${corrupt.message}; views, readiness and refunds answer 503 journal_unavailable until an operator restarts Interlock`,
  };
}
