import { describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { type Admission, agentShareOf, decideAdmission, type Pressure, type ShedClass, shedClassOf } from '../../server/http/overload-rules.ts';

// Who is shed under overload, decided before any route's work: agents only, by the refund requests
// in flight, each agent's share of them and the event loop's delay; people, health probes and
// Stripe's webhooks never.

describe('shedClassOf', () => {
  it.each<[string, string, ShedClass]>([
    ['POST', '/v1/refunds', 'refund_request'],
    ['POST', '/v1/refunds?x=1', 'refund_request'],
    ['GET', '/v1/refunds/r-1', 'agent_read'],
    ['GET', '/v1/receipts/0123456789ab/verify', 'agent_read'],
    ['POST', '/v1/nothing-here', 'agent_read'],
    ['GET', '/healthz', 'exempt'],
    ['GET', '/readyz', 'exempt'],
    ['POST', '/webhooks/stripe', 'exempt'],
    ['POST', '/api/items/0123456789ab/decisions', 'exempt'],
    ['GET', '/api/inbox', 'exempt'],
    // The router reads a percent-escaped path as the route it spells: it is shed as that route.
    ['POST', '/%761/refunds', 'refund_request'],
    ['POST', '/v1/%72efunds', 'refund_request'],
    ['GET', '/%761/refunds/r-1', 'agent_read'],
    ['GET', '/v1x', 'exempt'],
    // The MCP endpoint is an agent's: shed as a read; a refund asked through it takes its place in its handler.
    ['POST', '/mcp', 'agent_read'],
    ['GET', '/mcp', 'agent_read'],
    ['POST', '/mcpx', 'exempt'],
    ['GET', '/', 'exempt'],
  ])('%s %s is %s', (method, url, expected) => {
    expect(shedClassOf(method, url)).toBe(expected);
  });
});

describe('agentShareOf', () => {
  it.each<[string, number, number, number]>([
    ['an agent alone: all but a quarter, so another finds room', 128, 0, 96],
    ['two agents: half each', 128, 1, 64],
    ['three agents: a third each', 128, 2, 42],
    ['more agents than places: one each', 4, 9, 1],
    ['two places, an agent alone: one, the other kept', 2, 0, 1],
    ['one place: one', 1, 0, 1],
  ])('%s', (_what, max, others, expected) => {
    expect(agentShareOf(max, others)).toBe(expected);
  });
});

describe('decideAdmission', () => {
  const calm: Pressure = {
    agentsInFlight: 0,
    refundsInFlight: 0,
    refundsInFlightMax: 128,
    agentRefundsInFlight: 0,
    otherAgentsHolding: 0,
    eventLoopDelayMs: 0,
    eventLoopDelayMaxMs: 50,
  };
  const crowd = limits.eventLoopShedAgentsMin;
  it.each<[string, ShedClass, Partial<Pressure>, Admission]>([
    ['a refund request on a calm server', 'refund_request', {}, { admit: true }],
    ['the last place among refunds in flight', 'refund_request', { refundsInFlight: 127, agentRefundsInFlight: 63, otherAgentsHolding: 1 }, { admit: true }],
    ['a refund request beyond the refunds in flight', 'refund_request', { refundsInFlight: 128, otherAgentsHolding: 2 }, { admit: false, why: 'refunds_in_flight' }],
    ['an agent alone, up to three quarters of the places', 'refund_request', { refundsInFlight: 95, agentRefundsInFlight: 95 }, { admit: true }],
    ['an agent alone, beyond three quarters of the places', 'refund_request', { refundsInFlight: 96, agentRefundsInFlight: 96 }, { admit: false, why: 'agent_share' }],
    ['a second agent while the first holds all it may alone', 'refund_request', { refundsInFlight: 96, agentRefundsInFlight: 0, otherAgentsHolding: 1 }, { admit: true }],
    ['the first agent once a second holds a place: back to half', 'refund_request', { refundsInFlight: 97, agentRefundsInFlight: 96, otherAgentsHolding: 1 }, { admit: false, why: 'agent_share' }],
    ['a flooding agent over its share once two others hold places', 'refund_request', { refundsInFlight: 70, agentRefundsInFlight: 60, otherAgentsHolding: 2 }, { admit: false, why: 'agent_share' }],
    ['the count named before the share', 'refund_request', { refundsInFlight: 128, agentRefundsInFlight: 100 }, { admit: false, why: 'refunds_in_flight' }],
    ['an agent read beyond the refunds in flight', 'agent_read', { refundsInFlight: 128, agentRefundsInFlight: 128 }, { admit: true }],
    ['an agent read with the loop late and a crowd of agents in', 'agent_read', { agentsInFlight: crowd, eventLoopDelayMs: 51 }, { admit: false, why: 'event_loop_delay' }],
    ['a refund request with the loop late and a crowd in, the loop named first', 'refund_request', { agentsInFlight: crowd, refundsInFlight: 128, eventLoopDelayMs: 51 }, { admit: false, why: 'event_loop_delay' }],
    ['an agent read with the loop late but few agents in', 'agent_read', { agentsInFlight: crowd - 1, eventLoopDelayMs: 500 }, { admit: true }],
    ['an agent read with the loop at its bound', 'agent_read', { agentsInFlight: crowd, eventLoopDelayMs: 50 }, { admit: true }],
    ['an exempt request on a swamped server', 'exempt', { agentsInFlight: 10_000, refundsInFlight: 10_000, agentRefundsInFlight: 10_000, eventLoopDelayMs: 10_000 }, { admit: true }],
  ])('%s', (_what, shedClass, pressure, expected) => {
    expect(decideAdmission(shedClass, { ...calm, ...pressure })).toEqual(expected);
  });
});
