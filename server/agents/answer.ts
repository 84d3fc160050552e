import type { FastifyBaseLogger } from 'fastify';
import type { AgentConfig } from '../config/schema.ts';

/**
 * What the agents' use cases answer, whatever carries it (the HTTP routes, the MCP tools in
 * process): the HTTP status it is answered with, its body, and its headers (Retry-After). A
 * refusal is thrown as an AppError instead, with its code and its Retry-After.
 */
export interface AgentAnswer<Body> {
  status: number;
  body: Body;
  headers: Record<string, string>;
}

/** Who asks, and where what goes wrong after the answer is logged. */
export interface AgentCall {
  /** The agent its bearer token names (already checked). */
  agent: AgentConfig;
  /** The id of the call (its `x-request-id`), journaled with what it writes. */
  callId: string;
  log: Pick<FastifyBaseLogger, 'warn'>;
}

/** Retry-After, in whole seconds of at least 1, from a wait in ms. */
export function retryAfterSOf(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/** An answer with Retry-After when `retryAfterS` is given. */
export function agentAnswer<Body>(status: number, body: Body, retryAfterS: number | null = null): AgentAnswer<Body> {
  return { status, body, headers: retryAfterS === null ? {} : { 'retry-after': String(retryAfterS) } };
}
