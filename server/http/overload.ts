import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { limits } from '../../shared/limits.ts';
import { AppError } from './errors.ts';

// Shedding under overload, before any route's work: a request the server will not take is answered
// at the first hook of the app (before its body is read, its token checked or the journal caught up),
// so a flood of agents costs the server little more than reading their request lines, and the work
// it does take stays bounded. Only agents are shed: people's decisions, health probes and Stripe's
// webhooks are few, and each must get through a flood.

/** How a request is treated under overload, by the path it asks for. */
export const SHED_CLASSES = ['refund_request', 'agent_read', 'exempt'] as const;
/** One way a request is treated under overload. */
export type ShedClass = (typeof SHED_CLASSES)[number];

/** Why a request was shed. */
export const SHED_REASONS = ['refunds_in_flight', 'event_loop_delay'] as const;
/** One reason a request was shed. */
export type ShedReason = (typeof SHED_REASONS)[number];

/** What the admission check decided. */
export type Admission = { admit: true } | { admit: false; why: ShedReason };

/** What the admission check knows of the server at the moment a request arrives. */
export interface Pressure {
  /** Agents' calls (any of `/v1`) answered or worked on now. */
  agentsInFlight: number;
  refundsInFlight: number;
  refundsInFlightMax: number;
  eventLoopDelayMs: number;
  eventLoopDelayMaxMs: number;
}

/**
 * `POST /v1/refunds` does the work that takes time (Stripe calls, journal writes) and is bounded by
 * count; the agents' other calls read and are shed only when the event loop lags; everything else
 * (people, health, webhooks, pages) is never shed.
 */
export function shedClassOf(method: string, url: string): ShedClass {
  const path = decodedPath(url.split('?', 1)[0] ?? '');
  if (path !== '/v1' && !path.startsWith('/v1/')) return 'exempt';
  return method === 'POST' && (path === '/v1/refunds' || path === '/v1/refunds/') ? 'refund_request' : 'agent_read';
}

/**
 * A path as the router reads it: `/%761/refunds` is routed to `/v1/refunds`, so it is shed as that
 * route, not let past the bounds as an exempt path. One the router could not read is refused before this.
 */
function decodedPath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/**
 * Whether a request is taken, in precedence order: the exempt always, then the event loop, then
 * the count. A late event loop sheds agents only while enough of them are in: with a few, the lag
 * is someone else's (a start-up, a download, the machine), and turning them away would not help.
 */
export function decideAdmission(shedClass: ShedClass, pressure: Pressure): Admission {
  if (shedClass === 'exempt') return { admit: true };
  const loopLate = pressure.eventLoopDelayMs > pressure.eventLoopDelayMaxMs;
  if (loopLate && pressure.agentsInFlight >= limits.eventLoopShedAgentsMin) return { admit: false, why: 'event_loop_delay' };
  if (shedClass === 'refund_request' && pressure.refundsInFlight >= pressure.refundsInFlightMax) return { admit: false, why: 'refunds_in_flight' };
  return { admit: true };
}

/** What an agent is told when shed: nothing was written, and when to send the same request again. */
const SHED_MESSAGES: Record<ShedReason, (max: number) => string> = {
  refunds_in_flight: (max) => `the server is working on ${max} refund requests already; nothing was written, send this one again after Retry-After`,
  event_loop_delay: () => 'the server is overloaded; nothing was written, send this one again after Retry-After',
};

/**
 * A refund request's place among those in flight, given back once both its answer is closed and
 * its work (if it reached its handler) is done: `parts` counts which of the two are still going.
 */
interface Hold {
  parts: number;
  released: boolean;
  giveBack(): void;
}

/** One part of a hold is over; the last gives the place back, once. */
function dropPart(hold: Hold): void {
  hold.parts -= 1;
  if (hold.parts > 0 || hold.released) return;
  hold.released = true;
  hold.giveBack();
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Its place among the refund requests in flight, when it is one. */
    refundHold?: Hold;
  }
}

/** The options of the admission check (defaults from `limits`). */
export interface OverloadOptions {
  refundsInFlightMax?: number;
  eventLoopDelayMaxMs?: number;
}

/** What the admission check reports of itself (for the operators' figures). */
export interface OverloadState {
  refundsInFlight(): number;
  eventLoopDelayMs(): number;
  shed(): Record<ShedReason, number>;
}

/**
 * The admission check, as the app's first `onRequest` hook. The event loop's delay is the largest
 * seen over the last sampling window (`limits.eventLoopSampleMs`), so a lag is acted on within one
 * window and forgotten after the next.
 */
export function installOverloadShedding(app: FastifyInstance, options: OverloadOptions = {}): OverloadState {
  const refundsInFlightMax = options.refundsInFlightMax ?? limits.refundsInFlightMax;
  const eventLoopDelayMaxMs = options.eventLoopDelayMaxMs ?? limits.eventLoopDelayShedMs;
  const histogram = monitorEventLoopDelay({ resolution: limits.eventLoopResolutionMs });
  histogram.enable();
  let delayMs = 0;
  const sampler = setInterval(() => {
    // The histogram counts the timer's own period in each sample: what is past it is delay.
    delayMs = Math.max(0, histogram.max / 1e6 - limits.eventLoopResolutionMs);
    histogram.reset();
  }, limits.eventLoopSampleMs);
  sampler.unref();
  app.addHook('onClose', async () => {
    clearInterval(sampler);
    histogram.disable();
  });

  let inFlight = 0;
  let agentsInFlight = 0;
  const shed: Record<ShedReason, number> = { refunds_in_flight: 0, event_loop_delay: 0 };

  app.addHook('onRequest', async (request, reply) => {
    const shedClass = shedClassOf(request.method, request.url);
    const admission = decideAdmission(shedClass, { agentsInFlight, refundsInFlight: inFlight, refundsInFlightMax, eventLoopDelayMs: delayMs, eventLoopDelayMaxMs });
    if (!admission.admit) {
      shed[admission.why] += 1;
      reply.header('retry-after', String(limits.shedRetryAfterS));
      throw new AppError('rate_limited', SHED_MESSAGES[admission.why](refundsInFlightMax));
    }
    if (shedClass === 'exempt') return;
    agentsInFlight += 1;
    // 'close' comes for every answer, sent or cut off by the client.
    reply.raw.once('close', () => {
      agentsInFlight -= 1;
    });
    if (shedClass !== 'refund_request') return;
    inFlight += 1;
    const hold: Hold = { parts: 1, released: false, giveBack: () => {
        inFlight -= 1;
      },
    };
    request.refundHold = hold;
    reply.raw.once('close', () => dropPart(hold));
  });

  return { refundsInFlight: () => inFlight, eventLoopDelayMs: () => delayMs, shed: () => ({ ...shed }) };
}

/**
 * Run a refund request's work holding its place: a client that hangs up does not free the place
 * while the work it started goes on, so the bound is on work, not on open connections.
 */
export async function whileWorking<T>(request: FastifyRequest, work: () => Promise<T>): Promise<T> {
  const hold = request.refundHold;
  if (hold === undefined || hold.released) return work();
  hold.parts += 1;
  try {
    return await work();
  } finally {
    dropPart(hold);
  }
}
