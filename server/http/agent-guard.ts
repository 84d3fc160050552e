import type { FastifyRequest } from 'fastify';
import type { Services } from '../app/services.ts';
import { tokenMatches } from '../config/secrets.ts';
import type { AgentConfig } from '../config/schema.ts';
import { addressKeyOf } from '../throttle/client-address.ts';
import { RateLimiter } from '../throttle/rate-limiter.ts';
import { AppError } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    agent?: AgentConfig;
  }
}

/** The agent an Authorization header's bearer token belongs to, if any; every configured token is compared in constant time. */
export function agentOfAuthorization(agents: readonly AgentConfig[], authorization: string | undefined): AgentConfig | undefined {
  const token = /^Bearer ([A-Za-z0-9._~+/=-]{8,512})$/.exec(authorization ?? '')?.[1];
  return token ? agents.find((a) => tokenMatches(token, a.tokenSha256)) : undefined;
}

/** A request over its rate (throttle.agent_token, throttle.agent_address): 429 with the wait, nothing written. */
function refuseOverRate(waitMs: number | null, who: string): void {
  if (waitMs === null) return;
  const waitS = Math.max(1, Math.ceil(waitMs / 1000));
  throw new AppError('rate_limited', `${who} sent requests faster than its rate allows; nothing was written, send this one again in ${waitS} s`, waitS);
}

/** Checks an agent's call before its body is read: its address's rate, its token, its agent's rate. */
export type AgentGuard = (request: FastifyRequest) => void;

/**
 * The way in for every agent's call, over the agents' API and over MCP alike: one pair of rates per
 * server, so a call by either way counts against the same. Each server on the storage enforces its
 * share of the configured rates, by the servers alive (the alive leases, server/app/work-leases.ts):
 * together they allow the rate, not one per server. The address is checked first, so guessing
 * tokens is paced as well; then the agent the token names, set on the request.
 */
export function agentGuard(services: Services): AgentGuard {
  const wallMs = () => services.clock.wallMs();
  const servers = () => services.workLeases.liveServers();
  const byAddress = new RateLimiter(services.config.throttle.agentAddress, wallMs, servers);
  const byToken = new RateLimiter(services.config.throttle.agentToken, wallMs, servers);
  return (request) => {
    refuseOverRate(byAddress.take(addressKeyOf(request.ip)), 'this address');
    const agent = agentOfAuthorization(services.config.agents, request.headers.authorization);
    if (!agent) throw new AppError('unauthorized', 'send Authorization: Bearer <agent token>');
    refuseOverRate(byToken.take(agent.name), `agent ${agent.name}`);
    request.agent = agent;
  };
}

/** The agent a guarded request was let in as; an assertion outside a guarded scope (our bug). */
export function agentOf(request: FastifyRequest): AgentConfig {
  const agent = request.agent;
  if (agent === undefined) throw new Error(`${request.method} ${request.url} reads its agent outside the agents' guard`);
  return agent;
}
