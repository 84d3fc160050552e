import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { limits } from '../../shared/limits.ts';

/** The header a request id comes in and goes back out in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** What a caller's request id may be made of (`limits.httpRequestIdCharsMax`). */
const REQUEST_ID = new RegExp(`^[A-Za-z0-9._:-]{1,${limits.httpRequestIdCharsMax}}$`);

/** Crockford's base 32: no I, L, O or U, so an id read aloud or copied by hand stays one id. */
const BASE32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A new request id, unique across processes and restarts: 48 bits of the wall clock and 80 random
 * bits in 26 characters (a ULID), so ids sort by time in a log search and never repeat after a restart.
 */
export function newRequestId(nowMs: number = Date.now()): string {
  let time = '';
  for (let rest = nowMs, i = 0; i < 10; i++, rest = Math.floor(rest / 32)) time = BASE32[rest % 32] + time;
  // Each byte's low five bits: uniform, as 256 is a multiple of 32.
  const random = [...randomBytes(16)].map((byte) => BASE32[byte & 31]).join('');
  return time + random;
}

/** The caller's `x-request-id` when it is one (`REQUEST_ID`), else a new one. */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : newRequestId();
}

/** Routes a balancer or an orchestrator probes every few seconds: their lines are debug, not info. */
const PROBE_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

/** Fastify's own request lines, at debug for the probes and at its levels for everything else. */
class ProbesAtDebug extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (PROBE_ROUTES.has(request.routeOptions.url ?? '')) request.log.debug({ req: request }, 'incoming request');
    else super.incomingRequest(request, reply, metadata);
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (!error && PROBE_ROUTES.has(request.routeOptions.url ?? '')) reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    else super.requestCompleted(error, request, reply, metadata);
  }
}

/**
 * Fastify's options for request ids: the id is read from `x-request-id` when it is a safe one,
 * else made (Fastify's own default is a counter that starts again at each start), and each log
 * line of the request carries it as `reqId`. Fastify's `requestIdHeader` would take the header
 * unchecked, so the header is read here instead.
 */
export const REQUEST_ID_OPTIONS = {
  requestIdHeader: false,
  genReqId: (raw: IncomingMessage) => requestIdOf(raw.headers[REQUEST_ID_HEADER]),
  logController: new ProbesAtDebug(),
} as const;

/** Every answer names its request's id, so a caller can find its lines in the logs. */
export function echoRequestIds(app: FastifyInstance): void {
  // onSend, so refusals of any hook (a Host not served, a bad token) name it too.
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    return payload;
  });
}
