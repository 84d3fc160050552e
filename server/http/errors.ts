import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError } from '../app/app-error.ts';
import { appErrorAnswer, type ErrorAnswer, INTERNAL_ERROR, knownErrorAnswer, validationError } from '../app/error-answer.ts';

export { AppError, validationError };

/** Fastify's own client errors, mapped to our codes. */
function fromFastify(error: FastifyError): AppError | null {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new AppError('payload_too_large', 'the request body is too large');
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new AppError('unsupported_media_type', 'send application/json');
  if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return new AppError('validation_failed', 'the body is empty');
  if (error.statusCode === 400 && (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError)) {
    return new AppError('validation_failed', 'the body is not valid JSON');
  }
  if (error.validation) return validationError(error.validation, error.validationContext);
  return null;
}

/** The answer to one of Fastify's own client errors, or null for any other error. */
function fastifyAnswer(error: FastifyError): ErrorAnswer | null {
  const refusal = fromFastify(error);
  return refusal === null ? null : appErrorAnswer(refusal);
}

/** Node's error for a request whose client closed the connection before its body arrived. */
function clientHungUp(error: FastifyError, raw: IncomingMessage): boolean {
  return error.code === 'ECONNRESET' && error.message === 'aborted' && raw.destroyed;
}

/**
 * One error handler for the whole app: `{error: {code, message}}` with a stable code. An unknown
 * error is logged with its request and answered as internal_error, never with its text. A corrupt
 * journal, met by any route, is told to the views (which log it once and refuse every read from
 * then on) and answered 503 journal_unavailable.
 */
export function installErrorHandler(app: FastifyInstance, views: { report(error: unknown): boolean }): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = knownErrorAnswer(error, views) ?? fastifyAnswer(error);
    if (known) {
      if (known.retryAfterS !== null) reply.header('retry-after', String(known.retryAfterS));
      return reply.status(known.status).send(known.body);
    }
    if (clientHungUp(error, request.raw)) {
      // The client's doing, not the server's: nothing of the request was done, and nobody reads the answer.
      request.log.info({ url: request.url, method: request.method }, 'the client hung up before its request arrived whole; nothing was done for it');
      return reply.status(400).send({ error: { code: 'validation_failed', message: 'the request did not arrive whole' } });
    }
    request.log.error({ err: error, url: request.url, method: request.method }, 'unhandled error');
    return reply.status(500).send(INTERNAL_ERROR);
  });
}
