import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newRequestId, requestIdOf } from '../../server/http/request-ids.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

/** Pino's JSON lines, as the server writes them. */
function logSink(): { stream: Writable; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { stream, lines };
}

describe('request ids', () => {
  it.each([
    ['a UUID', '0b7c6a3e-2f4d-4c1e-9a51-2d2b6f0e7c11', true],
    ['a ULID', '01JE0Y7K3M9QZ4X8W2N6B5C1DA', true],
    ['a W3C trace id with a span', '4bf92f3577b34da6a3ce929d0e0e4736:00f067aa0ba902b7', true],
    ['empty', '', false],
    ['129 characters', 'a'.repeat(129), false],
    ['a space', 'abc def', false],
    ['a newline (log forging)', 'abc\n{"level":50}', false],
    ['non-ASCII', 'réquest', false],
  ])('x-request-id %s is %s taken as it is', (_what, header, taken) => {
    expect(requestIdOf(header) === header).toBe(taken);
  });

  it('a new id is a ULID: 26 characters, time first, never the same twice', () => {
    const ids = new Set(Array.from({ length: 2_000 }, () => newRequestId()));
    expect(ids.size).toBe(2_000);
    for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(newRequestId(Date.UTC(2026, 0, 1)) < newRequestId(Date.UTC(2026, 0, 2))).toBe(true);
  });
});

describe('request ids over HTTP, and the log', () => {
  let world: AppWorld;
  const sink = logSink();
  beforeAll(async () => {
    world = await buildAppWorld({ logger: { level: 'info', stream: sink.stream } });
  });
  afterAll(() => world.close());

  it('echoes a valid x-request-id, replaces a bad one, makes one when none came', async () => {
    const given = await world.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-123' } });
    expect(given.headers['x-request-id']).toBe('trace-123');
    const bad = await world.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'no spaces please' } });
    expect(bad.headers['x-request-id']).toMatch(/^[0-9A-Z]{26}$/);
    const none = await world.app.inject({ method: 'GET', url: '/v1/nope' });
    expect(none.statusCode).toBe(404);
    expect(none.headers['x-request-id']).toMatch(/^[0-9A-Z]{26}$/);
    // A URL that cannot be read is answered before any route, and still names its id, with helmet's headers.
    const unreadable = await world.app.inject({ method: 'GET', url: '/api/items/%zz', headers: { 'x-request-id': 'trace-456' } });
    expect(unreadable.statusCode).toBe(400);
    expect(unreadable.headers).toMatchObject({ 'x-request-id': 'trace-456', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer' });
  });

  it("puts the id in every log line of the request; health probes' lines are debug, below info", async () => {
    sink.lines.length = 0;
    await world.app.inject({ method: 'GET', url: '/readyz', headers: { 'x-request-id': 'probe-1' } });
    await world.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'probe-2' } });
    const pi = await world.payment(5_000);
    await world.app.inject({
      method: 'POST',
      url: '/v1/refunds',
      headers: { authorization: 'Bearer sk_agent_demo_support_bot', 'x-request-id': 'agent-call-7' },
      payload: { request_id: 'log-lines-1', payment_intent: pi, amount: 500 },
    });
    expect(sink.lines.filter((line) => line.reqId === 'probe-1' || line.reqId === 'probe-2')).toEqual([]);
    const mine = sink.lines.filter((line) => line.reqId === 'agent-call-7');
    expect(mine.map((line) => line.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
    // Every line Fastify writes for a request carries its id.
    expect(sink.lines.filter((line) => 'req' in line || 'res' in line).every((line) => typeof line.reqId === 'string')).toBe(true);
  });
});

describe('refund outcomes in the log', () => {
  let world: AppWorld;
  const sink = logSink();
  beforeAll(async () => {
    world = await buildAppWorld({ logger: { level: 'info', stream: sink.stream } });
  });
  afterAll(() => world.close());

  const outcomes = () => sink.lines.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('refund '));

  it('one info line per status a request reaches, with the x-request-id it was asked with, told once however often it is read', async () => {
    const pi = await world.payment(50_000);
    const ask = (xRequestId: string, requestId: string, amount: number) =>
      world.app.inject({
        method: 'POST',
        url: '/v1/refunds',
        headers: { authorization: 'Bearer sk_agent_demo_support_bot', 'x-request-id': xRequestId },
        payload: { request_id: requestId, payment_intent: pi, amount },
      });
    expect((await ask('ask-routine', 'outcome-routine', 1_000)).json().status).toBe('COMMITTED');
    expect((await ask('ask-person', 'outcome-person', 20_000)).json().status).toBe('QUEUED');
    await ask('ask-again', 'outcome-routine', 1_000);
    await world.agent('GET', '/v1/refunds/outcome-person');
    expect(outcomes().map((line) => [line.level, line.reqId, line.request_id, line.status])).toEqual([
      [30, 'ask-routine', 'outcome-routine', 'COMMITTED'],
      [30, 'ask-person', 'outcome-person', 'QUEUED'],
    ]);
    expect(outcomes()[0]).toMatchObject({ agent: 'support-bot', amount_minor: 1_000, currency: 'usd', outcome: expect.any(String) });
  });
});
