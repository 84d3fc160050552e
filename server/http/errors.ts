import type { FastifyError, FastifyInstance } from 'fastify';
import { ERROR_CODES, type ErrorCode } from '../../shared/api.ts';
import { isJournalFailure, type Views } from '../views.ts';

/** The world's mistake, answered with a stable code; our own bugs are plain Errors and become internal_error. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }

  get statusCode(): number {
    return ERROR_CODES[this.code];
  }
}

/** Fastify's own client errors, mapped to our codes. */
function fromFastify(error: FastifyError): AppError | null {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new AppError('payload_too_large', 'the request body is too large');
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new AppError('unsupported_media_type', 'send application/json');
  if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return new AppError('validation_failed', 'the body is empty');
  if (error.statusCode === 400 && (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError)) {
    return new AppError('validation_failed', 'the body is not valid JSON');
  }
  if (error.validation) return new AppError('validation_failed', error.message);
  return null;
}

/** The answer to anything that met a journal which failed a check, wherever it was met. */
export const JOURNAL_UNAVAILABLE = 'the journal failed an integrity check; nothing is shown, written or sent until an operator restarts Interlock';

/**
 * One error handler for the whole app: `{error: {code, message}}` with a stable code. An unknown
 * error is logged with its request and answered as internal_error, never with its text. A corrupt
 * journal, met by any route, is told to the views (which log it once and refuse every read from
 * then on) and answered 503 journal_unavailable.
 */
export function installErrorHandler(app: FastifyInstance, views: Views): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (isJournalFailure(error)) {
      views.report(error);
      return reply.status(ERROR_CODES.journal_unavailable).send({ error: { code: 'journal_unavailable', message: JOURNAL_UNAVAILABLE } });
    }
    const known = error instanceof AppError ? error : fromFastify(error);
    if (known) return reply.status(known.statusCode).send({ error: { code: known.code, message: known.message } });
    request.log.error({ err: error, url: request.url, method: request.method }, 'unhandled error');
    return reply.status(500).send({ error: { code: 'internal_error', message: 'something went wrong on our side; nothing was changed by this answer' } });
  });
}
