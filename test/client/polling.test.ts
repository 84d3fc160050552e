import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createInterlockClient, InterlockError, nextDelayMs, parseRetryAfterMs, sleepMsBeforeNextPoll, UnexpectedResponseError } from '../../shared/client/index.ts';

/** The poller's schedule as pure functions, and `Retry-After` honoured against a tiny local HTTP server. */

const NOW_MS = 1_700_000_000_000;

describe('the poll schedule', () => {
  it('starts at 1 s and doubles to at most 30 s', () => {
    const delays: number[] = [];
    let delay: number | null = null;
    for (let i = 0; i < 8; i++) {
      delay = nextDelayMs(delay);
      delays.push(delay);
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it.each([
    ['120', 120_000],
    ['0', 0],
    ['1.5', 1_500],
    [' 7 ', 7_000],
    [new Date(NOW_MS + 9_000).toUTCString(), 9_000],
    [new Date(NOW_MS - 60_000).toUTCString(), 0],
    ['soon', null],
    ['-5', null],
    ['', null],
    [null, null],
  ])('Retry-After %j is %j ms', (header, expected) => {
    expect(parseRetryAfterMs(header, NOW_MS)).toBe(expected);
  });

  it.each([
    ['the backoff when the server says nothing', 4_000, null, 60_000, 4_000],
    ['Retry-After when it asks for longer', 1_000, 5_000, 60_000, 5_000],
    ['the backoff when Retry-After asks for less', 16_000, 1_000, 60_000, 16_000],
    ['what is left before the deadline', 30_000, 90_000, 12_000, 12_000],
    ['nothing once the deadline has passed', 1_000, null, -5, 0],
  ])('sleeps %s', (_name, delayMs, retryAfterMs, remainingMs, expected) => {
    expect(sleepMsBeforeNextPoll(delayMs, retryAfterMs, remainingMs)).toBe(expected);
  });
});

/** A local server that answers each request with the next of `answers`; the last one repeats. */
type Answer = { status: number; headers?: Record<string, string>; body: string };
let server: Server | null = null;
async function serve(answers: Answer[]): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    paths.push(request.url ?? '');
    const answer = answers[Math.min(paths.length - 1, answers.length - 1)]!;
    response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    response.end(answer.body);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(null));
  server = null;
});

const answer = (status: string) =>
  JSON.stringify({ request_id: 'case-9', effect_id: '0123456789ab', status, why: 'w', refund: null, changes: [], repairs: [], receipt: '/v1/receipts/0123456789ab' });

function fakeClock() {
  let nowMs = NOW_MS;
  const sleeps: number[] = [];
  const sleep = async (ms: number) => {
    sleeps.push(ms);
    nowMs += ms;
  };
  return { sleeps, now: () => nowMs, sleep };
}

describe('waitForDecision against a server that asks to wait', () => {
  it('honours Retry-After in seconds and as an HTTP date, then returns the final answer', async () => {
    const { url, paths } = await serve([
      { status: 202, headers: { 'retry-after': '5' }, body: answer('QUEUED') },
      // Asked for at NOW + 5 s, this date is 7 s later.
      { status: 202, headers: { 'retry-after': new Date(NOW_MS + 12_000).toUTCString() }, body: answer('APPROVED') },
      { status: 200, body: answer('COMMITTED') },
    ]);
    const clock = fakeClock();
    const client = createInterlockClient({ baseUrl: url, token: 'sk_test_token', now: clock.now, sleep: clock.sleep, random: () => 0 });
    const result = await client.waitForDecision('case-9');
    expect(result).toMatchObject({ final: true, httpStatus: 200, polls: 3, answer: { status: 'COMMITTED' } });
    expect(clock.sleeps).toEqual([5_000, 7_000]);
    expect(paths).toEqual(['/v1/refunds/case-9', '/v1/refunds/case-9', '/v1/refunds/case-9']);
  });

  it('a Retry-After beyond the deadline is cut at the deadline, and the answer then is returned, not final', async () => {
    const { url } = await serve([{ status: 202, headers: { 'retry-after': '3600' }, body: answer('QUEUED') }]);
    const clock = fakeClock();
    const client = createInterlockClient({ baseUrl: url, token: 'sk_test_token', now: clock.now, sleep: clock.sleep, random: () => 0 });
    expect(await client.waitForDecision('case-9', { timeoutMs: 10_000 })).toMatchObject({ final: false, polls: 2, waitedMs: 10_000 });
    expect(clock.sleeps).toEqual([10_000]);
  });

  it('429 rate_limited carries retryAfterMs, and the poller waits that long before reading again', async () => {
    const limited = { status: 429, headers: { 'retry-after': '3' }, body: JSON.stringify({ error: { code: 'rate_limited', message: 'slow down' } }) };
    const { url } = await serve([limited, { status: 200, body: answer('COMMITTED') }]);
    const clock = fakeClock();
    const client = createInterlockClient({ baseUrl: url, token: 'sk_test_token', now: clock.now, sleep: clock.sleep, random: () => 0 });
    expect(await client.waitForDecision('case-9')).toMatchObject({ final: true, polls: 2 });
    expect(clock.sleeps).toEqual([3_000]);

    const { url: always } = await serveAgain([limited]);
    const direct = createInterlockClient({ baseUrl: always, token: 'sk_test_token', now: clock.now, sleep: clock.sleep, random: () => 0 });
    const error = await direct.requestRefund({ request_id: 'case-9', payment_intent: 'pi_1', amount: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InterlockError);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429, retryAfterMs: 3_000 });
  });

  it('an answer that is not Interlock (a proxy page, an unknown code) is an unexpected_response, not a server code', async () => {
    const { url } = await serve([{ status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad Gateway</html>' }]);
    const client = createInterlockClient({ baseUrl: url, token: 'sk_test_token' });
    const error = await client.getRefund('case-9').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({ code: 'unexpected_response', status: 502, bodyText: '<html>Bad Gateway</html>' });

    const { url: other } = await serveAgain([{ status: 418, body: JSON.stringify({ error: { code: 'teapot', message: 'short and stout' } }) }]);
    const unknown = await createInterlockClient({ baseUrl: other, token: 'sk_test_token' })
      .getRefund('case-9')
      .catch((e: unknown) => e);
    expect(unknown).toMatchObject({ code: 'unexpected_response', status: 418 });
  });
});

/** Replace the local server with one giving other answers. */
async function serveAgain(answers: Answer[]) {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(null));
  return serve(answers);
}
