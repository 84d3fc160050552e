import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppClock } from '../../server/app/clock.ts';
import { hashToken } from '../../server/config/secrets.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// Agents' rates on /v1 (throttle.agent_token, throttle.agent_address), on a wall clock the test
// moves: past either, 429 rate_limited with Retry-After, before the token is even looked at for
// the address's, and nothing written.

const OTHER_TOKEN = 'sk_agent_other_bot_for_rates';
let nowMs = Date.UTC(2026, 11, 5, 9);
let world: AppWorld;
beforeAll(async () => {
  const config = testConfig();
  world = await buildAppWorld({
    clock: new AppClock(() => nowMs),
    config: {
      ...config,
      agents: [...config.agents, { name: 'other-bot', tokenSha256: hashToken(OTHER_TOKEN) }],
      throttle: { ...config.throttle, agentToken: { burst: 3, perSecond: 1 }, agentAddress: { burst: 5, perSecond: 2 } },
    },
  });
});
afterAll(async () => world.close());

const status = (token: string, from: string) =>
  world.app.inject({ method: 'GET', url: '/v1/refunds/rate-1', remoteAddress: from, headers: { authorization: `Bearer ${token}` } });

async function codes(token: string, from: string, times: number): Promise<string[]> {
  const answers: string[] = [];
  for (let i = 0; i < times; i++) {
    const response = await status(token, from);
    answers.push(response.statusCode === 429 ? `429 ${response.headers['retry-after']}` : String(response.statusCode));
  }
  return answers;
}

describe('/v1 rates per agent token and per address', () => {
  it('an agent past its burst is told 429 rate_limited with Retry-After; another agent is not, and it goes on once refilled', async () => {
    expect(await codes(AGENT_TOKEN, '203.0.113.1', 4)).toEqual(['404', '404', '404', '429 1']);
    const refused = await status(AGENT_TOKEN, '203.0.113.2');
    expect(refused.json()).toEqual({
      error: { code: 'rate_limited', message: 'agent support-bot sent requests faster than its rate allows; nothing was written, send this one again in 1 s' },
    });
    expect(await codes(OTHER_TOKEN, '203.0.113.3', 1)).toEqual(['404']);
    nowMs += 1_000;
    expect(await codes(AGENT_TOKEN, '203.0.113.1', 2)).toEqual(['404', '429 1']);
    nowMs += 10_000;
  });

  it('one address past its burst is refused whatever tokens it sends, wrong ones included, before they are checked', async () => {
    const wrong = 'sk_agent_wrong_token_1234';
    expect(await codes(wrong, '198.51.100.1', 6)).toEqual(['401', '401', '401', '401', '401', '429 1']);
    expect(await codes(OTHER_TOKEN, '198.51.100.1', 1)).toEqual(['429 1']);
    expect(await codes(OTHER_TOKEN, '198.51.100.2', 1)).toEqual(['404']);
    // An IPv6 /64 is one address; the next /64 is another.
    expect(await codes(wrong, '2001:db8:9:9::1', 5)).toEqual(['401', '401', '401', '401', '401']);
    expect(await codes(wrong, '2001:db8:9:9:ffff::2', 1)).toEqual(['429 1']);
    expect(await codes(wrong, '2001:db8:9:a::1', 1)).toEqual(['401']);
    nowMs += 10_000;
  });

  it('a refund refused for its rate writes nothing and sends nothing; sent again later it is taken', async () => {
    const pi = await world.payment(10_000);
    const body = { request_id: 'rate-refund', payment_intent: pi, amount: 1_000 };
    const post = () => world.app.inject({ method: 'POST', url: '/v1/refunds', remoteAddress: '192.0.2.9', headers: { authorization: `Bearer ${AGENT_TOKEN}` }, payload: body });
    await codes(AGENT_TOKEN, '192.0.2.9', 3);
    const before = await world.entryCount();
    const refused = await post();
    expect([refused.statusCode, refused.json().error.code, refused.headers['retry-after']]).toEqual([429, 'rate_limited', '1']);
    expect(await world.entryCount()).toBe(before);
    expect(world.sandbox.refunds(pi)).toHaveLength(0);
    nowMs += 1_000;
    expect((await post()).json().status).toBe('COMMITTED');
  });
});
