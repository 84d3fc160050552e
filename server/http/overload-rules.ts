import { limits } from '../../shared/limits.ts';

// Who is taken under overload, decided from what the server holds at the moment a request arrives:
// pure functions, with no clock and no I/O, so each rule is a row of a table test. The shell that
// counts and answers is overload.ts.

/** How a request is treated under overload, by the path it asks for. */
export const SHED_CLASSES = ['refund_request', 'agent_read', 'exempt'] as const;
/** One way a request is treated under overload. */
export type ShedClass = (typeof SHED_CLASSES)[number];

/** Why a request was shed. */
export const SHED_REASONS = ['refunds_in_flight', 'agent_share', 'event_loop_delay'] as const;
/** One reason a request was shed. */
export type ShedReason = (typeof SHED_REASONS)[number];

/** What the admission check decided. */
export type Admission = { admit: true } | { admit: false; why: ShedReason };

/** What the admission check knows of the server, and of the asking agent, at the moment a request arrives. */
export interface Pressure {
  /** Agents' calls (any of `/v1`) answered or worked on now. */
  agentsInFlight: number;
  /** Places held by refund requests, working or waiting their turn to work. */
  refundsInFlight: number;
  refundsInFlightMax: number;
  /** Places held by the asking agent's refund requests. */
  agentRefundsInFlight: number;
  /** Other agents holding at least one place. */
  otherAgentsHolding: number;
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
  // The MCP endpoint is an agent's too: each call is shed as a read when the event loop lags.
  if (path === '/mcp' || path === '/mcp/') return 'agent_read';
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
 * The most places one agent's refund requests may hold: alone, all but a quarter, kept for the next
 * agent to arrive (while one agent floods, it would otherwise lose every race for a place the flood
 * frees); beside others, an equal share among the agents holding places (itself counted), so the
 * flooding one is turned away until it is back within its share.
 */
export function agentShareOf(refundsInFlightMax: number, otherAgentsHolding: number): number {
  const share = otherAgentsHolding === 0 ? refundsInFlightMax - Math.max(1, Math.floor(refundsInFlightMax / 4)) : Math.floor(refundsInFlightMax / (otherAgentsHolding + 1));
  return Math.max(1, share);
}

/**
 * Whether a request is taken, in precedence order: the exempt always, then the event loop, then
 * the count, then the agent's share. A late event loop sheds agents only while enough of them are
 * in: with a few, the lag is someone else's (a start-up, a download, the machine), and turning them
 * away would not help.
 */
export function decideAdmission(shedClass: ShedClass, pressure: Pressure): Admission {
  if (shedClass === 'exempt') return { admit: true };
  const loopLate = pressure.eventLoopDelayMs > pressure.eventLoopDelayMaxMs;
  if (loopLate && pressure.agentsInFlight >= limits.eventLoopShedAgentsMin) return { admit: false, why: 'event_loop_delay' };
  if (shedClass !== 'refund_request') return { admit: true };
  if (pressure.refundsInFlight >= pressure.refundsInFlightMax) return { admit: false, why: 'refunds_in_flight' };
  if (pressure.agentRefundsInFlight >= agentShareOf(pressure.refundsInFlightMax, pressure.otherAgentsHolding)) return { admit: false, why: 'agent_share' };
  return { admit: true };
}
