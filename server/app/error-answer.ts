import { ERROR_CODES, type ErrorBody } from '../../shared/api.ts';
import { isBusy, isClosed, isJournalFailure, isUnavailable } from '../views/failures.ts';
import { AppError } from './app-error.ts';

// How a refusal is answered, by the HTTP routes and by the agents' use cases called in process
// alike: the status, the `{error: {code, message}}` body and the Retry-After of each.

/** One refusal by a route's schema, as Ajv reports it (with `verbose`, so the field's own schema is there). */
export interface SchemaRefusal {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: { description?: unknown; properties?: Record<string, { description?: unknown }> };
}

/** `/flags/0` → `flags[0]`: the field as an agent wrote it. */
function fieldName(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : `${i === 0 ? '' : '.'}${part.replace(/~1/g, '/').replace(/~0/g, '~')}`))
    .join('');
}

/**
 * A schema's refusal as `{field}: {what it must be}`: the field named as the agent wrote it, and
 * the field's description from the schema (the contract's own words). A malformed effect id in a
 * path is no such item (404), as it always was: it names nothing that exists.
 */
export function validationError(refusals: readonly SchemaRefusal[], context: string | undefined): AppError {
  const first = refusals[0];
  const where = context === 'querystring' ? 'query' : (context ?? 'body');
  if (first === undefined) return new AppError('validation_failed', `${where}: not valid`);
  const path = fieldName(first.instancePath);
  if (first.keyword === 'additionalProperties') {
    return new AppError('validation_failed', `${path ? `${path}.` : ''}${String(first.params.additionalProperty)}: unknown field`);
  }
  if (first.keyword === 'required') {
    const missing = String(first.params.missingProperty);
    const description = first.parentSchema?.properties?.[missing]?.description;
    return new AppError('validation_failed', `${path ? `${path}.` : ''}${missing}: ${typeof description === 'string' ? `required, ${description}` : 'required'}`);
  }
  if (context === 'params' && path === 'effect_id') return new AppError('not_found', 'no such item');
  if (path === '') return new AppError('validation_failed', `${where}: must be a JSON object`);
  const description = first.parentSchema?.description;
  return new AppError('validation_failed', `${path}: ${typeof description === 'string' ? description : (first.message ?? 'not valid')}`);
}

/** The answer to anything that met a journal which failed a check, wherever it was met. */
export const JOURNAL_UNAVAILABLE = 'the journal failed an integrity check; nothing is shown, written or sent until an operator restarts Interlock';

/** The answer to a call the journal's database refused because another process held it past the wait. */
const STORE_BUSY = "the journal's database was held by another process past the wait; nothing was written, try again";
/** The answer to a call that could not reach the journal's database (restarting, or cut off). */
const STORE_UNAVAILABLE = "the journal's database cannot be reached now; nothing was written, try again after Retry-After";
/** The answer to a call that reached the journal's database as the server stopped. */
const STORE_CLOSED = 'the server is stopping; nothing was written, try again';

/** An error answer: its status, its body, and the Retry-After it carries when one is said. */
export interface ErrorAnswer {
  status: number;
  body: ErrorBody;
  retryAfterS: number | null;
}

/**
 * The answer to an error the contract names: a corrupt journal (told to the views, which log it
 * once and refuse every read from then on), a database that cannot be reached or is busy, an
 * AppError; null for anything else (a framework's own refusal, our bug, or a client gone).
 */
export function knownErrorAnswer(error: unknown, views: { report(error: unknown): boolean }): ErrorAnswer | null {
  if (isJournalFailure(error)) {
    views.report(error);
    return { status: ERROR_CODES.journal_unavailable, body: { error: { code: 'journal_unavailable', message: JOURNAL_UNAVAILABLE } }, retryAfterS: null };
  }
  // Nothing was written, and the views stand as they were: the next call tries the database again.
  if (isUnavailable(error)) return { status: ERROR_CODES.journal_unavailable, body: { error: { code: 'journal_unavailable', message: STORE_UNAVAILABLE } }, retryAfterS: 1 };
  if (isBusy(error) || isClosed(error)) {
    // Nothing was written: the store refused the call whole. Worth a retry, as Retry-After says.
    return { status: ERROR_CODES.not_ready, body: { error: { code: 'not_ready', message: isBusy(error) ? STORE_BUSY : STORE_CLOSED } }, retryAfterS: 1 };
  }
  return error instanceof AppError ? appErrorAnswer(error) : null;
}

/** An AppError's answer: its code's status, its code and message, its Retry-After. */
export function appErrorAnswer(error: AppError): ErrorAnswer {
  return { status: error.statusCode, body: { error: { code: error.code, message: error.message } }, retryAfterS: error.retryAfterS };
}

/** The answer to our own bug: its text stays in the log. */
export const INTERNAL_ERROR: ErrorBody = { error: { code: 'internal_error', message: 'something went wrong on our side; nothing was changed by this answer' } };

