import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { limits } from '../../shared/limits.ts';
import { AppError } from './errors.ts';
import { agentShareOf, decideAdmission, type ShedClass, type ShedReason, shedClassOf } from './overload-rules.ts';

// Shedding under overload, before any route's work: a request the server will not take is answered
// at the first hook of the app (before its body is read, its token checked or the journal caught up),
// so a flood of agents costs the server little more than reading their request lines, and the work
// it does take stays bounded. Only agents are shed: people's decisions, health probes and Stripe's
// webhooks are few, and each must get through a flood.

/** What an agent is told when shed: nothing was written, and when to send the same request again. */
const SHED_MESSAGES: Record<ShedReason, (max: number, share: number) => string> = {
  refunds_in_flight: (max) => `the server is working on ${max} refund requests already; nothing was written, send this one again after Retry-After`,
  agent_share: (max, share) =>
    `this agent holds its share (${share}) of the ${max} refund requests the server takes at once; nothing was written, send this one again after Retry-After`,
  event_loop_delay: () => 'the server is overloaded; nothing was written, send this one again after Retry-After',
};

/**
 * A refund request's place among those in flight, given back once both its answer is closed and
 * its work (if it reached its handler) is done: `parts` counts which of the two are still going.
 * `working` once it holds one of the places at work, not only one in the line.
 */
interface Hold {
  parts: number;
  released: boolean;
  working: boolean;
  giveBack(): void;
}

/** One part of a hold is over; the last gives the place back, once. */
function dropPart(hold: Hold): void {
  hold.parts -= 1;
  if (hold.parts > 0 || hold.released) return;
  hold.released = true;
  hold.giveBack();
}

/** A refund request admitted while every place at work was taken: it goes on when `start` is called. */
interface Waiter {
  hold: Hold;
  start(): void;
  /** The agent hung up before its turn: nothing of its request was looked at. */
  cancel(): void;
}

/**
 * The places at work among the places held: a refund request takes one at once when one is free
 * and nobody waits, else waits its turn in arrival order; a place given back goes to the first in line.
 */
class WorkPlaces {
  readonly #max: number;
  readonly #line: Waiter[] = [];
  #taken = 0;

  constructor(max: number) {
    this.#max = max;
  }

  get taken(): number {
    return this.#taken;
  }

  /** Resolves once `hold` has a place at work; rejects if it is given back before (its agent hung up). */
  async take(hold: Hold): Promise<void> {
    if (this.#taken < this.#max && this.#line.length === 0) {
      this.#give(hold);
      return;
    }
    await new Promise<void>((start, reject) => {
      const cancel = () => reject(new AppError('rate_limited', 'the agent hung up while its request waited its turn; nothing was written'));
      this.#line.push({ hold, start, cancel });
    });
  }

  /** `hold` is over: its place at work goes to the next in line, or it leaves the line. */
  giveBack(hold: Hold): void {
    if (!hold.working) {
      const at = this.#line.findIndex((waiter) => waiter.hold === hold);
      if (at !== -1) this.#line.splice(at, 1)[0]!.cancel();
      return;
    }
    this.#taken -= 1;
    while (this.#taken < this.#max && this.#line.length > 0) {
      const next = this.#line.shift()!;
      this.#give(next.hold);
      next.start();
    }
  }

  #give(hold: Hold): void {
    this.#taken += 1;
    hold.working = true;
  }
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
  refundsWorkingMax?: number;
  eventLoopDelayMaxMs?: number;
  /**
   * The agent an Authorization header names, or null for none or an unknown token (those share one
   * share): whose share of the places a refund request counts against.
   */
  agentOf?: (authorization: string | undefined) => string | null;
  /** Told of each agent shed (server/app/loop-pressure.ts). */
  onShed?: () => void;
}

/** What the admission check reports of itself (for the operators' figures). */
export interface OverloadState {
  /**
   * A refund request that reached the server another way than `POST /v1/refunds` (a tool call over
   * MCP): shed as that route sheds (429 rate_limited with Retry-After), or run holding its place
   * among the refund requests in flight, waiting its turn for a place at work.
   */
  whileRefunding<T>(agent: string | null, refund: () => Promise<T>): Promise<T>;
  /** Agents' calls (any of `/v1`) being answered or worked on. */
  agentsInFlight(): number;
  /** Places held by refund requests, at work or waiting their turn. */
  refundsInFlight(): number;
  /** Refund requests at work. */
  refundsWorking(): number;
  eventLoopDelayMs(): number;
  /** Requests shed since the start, by why. */
  shed(): Record<ShedReason, number>;
}

/** The event loop's delay: the largest seen over the last sampling window, read at any time. */
function sampleEventLoopDelay(app: FastifyInstance): () => number {
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
  return () => delayMs;
}

/**
 * The admission check, as the app's first `onRequest` hook. The event loop's delay is the largest
 * seen over the last sampling window (`limits.eventLoopSampleMs`), so a lag is acted on within one
 * window and forgotten after the next. A refund request admitted beyond the places at work waits
 * in line in this hook, before its body is parsed or its token checked.
 */
export function installOverloadShedding(app: FastifyInstance, options: OverloadOptions = {}): OverloadState {
  const refundsInFlightMax = options.refundsInFlightMax ?? limits.refundsInFlightMax;
  const refundsWorkingMax = Math.min(options.refundsWorkingMax ?? limits.refundsWorkingMax, refundsInFlightMax);
  const eventLoopDelayMaxMs = options.eventLoopDelayMaxMs ?? limits.eventLoopDelayShedMs;
  const agentOf = options.agentOf ?? (() => null);
  const eventLoopDelayMs = sampleEventLoopDelay(app);

  let inFlight = 0;
  let agentsInFlight = 0;
  /** Places held, by agent (null: no known agent); an agent holding none is not in it. */
  const heldBy = new Map<string | null, number>();
  const work = new WorkPlaces(refundsWorkingMax);
  const shed: Record<ShedReason, number> = { refunds_in_flight: 0, agent_share: 0, event_loop_delay: 0 };

  /** Shed a request of `shedClass` now, or let it in; `agent` is whose share a refund request counts against. */
  const admit = (shedClass: Exclude<ShedClass, 'exempt'>, agent: string | null): void => {
    const agentRefundsInFlight = heldBy.get(agent) ?? 0;
    const otherAgentsHolding = heldBy.size - (agentRefundsInFlight > 0 ? 1 : 0);
    const admission = decideAdmission(shedClass, {
      agentsInFlight,
      refundsInFlight: inFlight,
      refundsInFlightMax,
      agentRefundsInFlight,
      otherAgentsHolding,
      eventLoopDelayMs: eventLoopDelayMs(),
      eventLoopDelayMaxMs,
    });
    if (admission.admit) return;
    shed[admission.why] += 1;
    options.onShed?.();
    throw new AppError('rate_limited', SHED_MESSAGES[admission.why](refundsInFlightMax, agentShareOf(refundsInFlightMax, otherAgentsHolding)), limits.shedRetryAfterS);
  };

  /** A place among the refund requests in flight for `agent`'s request, held until its parts are over. */
  const holdPlace = (agent: string | null): Hold => {
    inFlight += 1;
    heldBy.set(agent, (heldBy.get(agent) ?? 0) + 1);
    const hold: Hold = {
      parts: 1,
      released: false,
      working: false,
      giveBack: () => {
        inFlight -= 1;
        const held = (heldBy.get(agent) ?? 1) - 1;
        if (held === 0) heldBy.delete(agent);
        else heldBy.set(agent, held);
        work.giveBack(hold);
      },
    };
    return hold;
  };

  app.addHook('onRequest', async (request, reply) => {
    const shedClass = shedClassOf(request.method, request.url);
    if (shedClass === 'exempt') return;
    const agent = shedClass === 'refund_request' ? agentOf(request.headers.authorization) : null;
    admit(shedClass, agent);
    agentsInFlight += 1;
    // 'close' comes for every answer, sent or cut off by the client.
    reply.raw.once('close', () => {
      agentsInFlight -= 1;
    });
    if (shedClass !== 'refund_request') return;
    const hold = holdPlace(agent);
    request.refundHold = hold;
    reply.raw.once('close', () => dropPart(hold));
    await work.take(hold);
  });

  return {
    async whileRefunding(agent, refund) {
      admit('refund_request', agent);
      const hold = holdPlace(agent);
      try {
        await work.take(hold);
        return await refund();
      } finally {
        dropPart(hold);
      }
    },
    agentsInFlight: () => agentsInFlight,
    refundsInFlight: () => inFlight,
    refundsWorking: () => work.taken,
    eventLoopDelayMs,
    shed: () => ({ ...shed }),
  };
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
