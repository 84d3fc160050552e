import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppClock } from '../../server/app/clock.ts';
import * as secrets from '../../server/config/secrets.ts';
import { limits } from '../../shared/limits.ts';
import { type AppWorld, buildAppWorld, DEMO_PASSWORD, testConfig } from '../support/app-world.ts';

// Login throttling over HTTP, on a wall clock the test moves: failures counted per name and
// address (an IPv6 /64 as one), 1 s doubling up to 15 minutes, checked before the password is
// hashed; a per-name ceiling that browsers with a device cookie for the name pass.

vi.mock('../../server/config/secrets.ts', async (importOriginal) => {
  const original = await importOriginal<typeof secrets>();
  return { ...original, verifyPassword: vi.fn(original.verifyPassword) };
});
const hashed = vi.mocked(secrets.verifyPassword);

let nowMs = Date.UTC(2026, 11, 5, 9);
let world: AppWorld;
beforeAll(async () => {
  // A low ceiling, so reaching it takes a few requests rather than a hundred scrypt hashes.
  const config = testConfig();
  world = await buildAppWorld({ clock: new AppClock(() => nowMs), config: { ...config, throttle: { ...config.throttle, loginFailuresPerHour: 5, loginAddressFailuresPerHour: 8 } } });
});
afterAll(async () => world.close());
beforeEach(() => {
  // Each test starts a day later: every count of the one before is forgotten.
  nowMs += limits.loginFailuresForgetMs + limits.loginNameWindowMs;
  hashed.mockClear();
});

interface Attempt {
  name?: string;
  password?: string;
  from?: string;
  cookie?: string;
}

const logIn = ({ name = 'ana', password = DEMO_PASSWORD, from = '203.0.113.7', cookie }: Attempt = {}) =>
  world.app.inject({ method: 'POST', url: '/api/session', remoteAddress: from, payload: { name, password }, ...(cookie ? { headers: { cookie } } : {}) });

const outcome = async (attempt: Attempt) => {
  const response = await logIn(attempt);
  return response.statusCode === 429 ? `429 retry-after ${response.headers['retry-after']}` : String(response.statusCode);
};

const deviceCookieOf = (response: Awaited<ReturnType<typeof logIn>>) =>
  ([] as string[]).concat(response.headers['set-cookie'] ?? []).find((c) => c.startsWith('interlock_device='));

describe('POST /api/session throttling', () => {
  it('a wrong password makes that name wait 1 s from that address only; then the right one gets in', async () => {
    expect(await outcome({ password: 'nope' })).toBe('401');
    const refused = await logIn();
    expect([refused.statusCode, refused.json().error.code, refused.headers['retry-after']]).toEqual([429, 'rate_limited', '1']);
    expect(refused.json().error.message).toBe('too many failed logins for this name from here; try again in 1 second');
    expect(refused.headers['set-cookie']).toBeUndefined();
    // Another address, another name: not slowed at all.
    expect(await outcome({ from: '203.0.113.8' })).toBe('200');
    expect(await outcome({ name: 'bea' })).toBe('200');
    nowMs += 1_000;
    expect(await outcome({})).toBe('200');
    // The success wiped that address's count: the next mistake waits 1 s again, not 2.
    expect(await outcome({ password: 'nope' })).toBe('401');
    nowMs += 1_000;
    expect(await outcome({})).toBe('200');
  });

  it('the delay doubles with each failure in a row and stops at 15 minutes, device cookie or not', async () => {
    // The browser's device cookie keeps this name's ceiling (5 an hour here) out of the way: the
    // delay per address holds all the same.
    const cookie = deviceCookieOf(await logIn({ name: 'cy' }))!.split(';')[0]!;
    const waits: string[] = [];
    for (let i = 0; i < 12; i++) {
      expect(await outcome({ name: 'cy', password: 'nope', cookie })).toBe('401');
      const refused = await logIn({ name: 'cy', cookie });
      waits.push(String(refused.headers['retry-after']));
      nowMs += Number(refused.headers['retry-after']) * 1000;
    }
    expect(waits).toEqual(['1', '2', '4', '8', '16', '32', '64', '128', '256', '512', '900', '900']);
    expect(await outcome({ name: 'cy', cookie })).toBe('200');
  });

  it('the check runs before the password is hashed: a refused attempt costs no scrypt', async () => {
    expect(await outcome({ password: 'nope' })).toBe('401');
    expect(hashed).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 20; i++) expect(await outcome({ password: 'nope' })).toBe('429 retry-after 1');
    expect(hashed).toHaveBeenCalledTimes(1);
  });

  it('addresses in one IPv6 /64 are counted together; the next /64 is not', async () => {
    expect(await outcome({ password: 'nope', from: '2001:db8:1:2::5' })).toBe('401');
    expect(await outcome({ from: '2001:db8:1:2:ffff::1' })).toBe('429 retry-after 1');
    expect(await outcome({ from: '2001:db8:1:3::5' })).toBe('200');
  });

  it('an unknown name is throttled the same way, so the answers do not tell which names exist', async () => {
    expect(await outcome({ name: 'nobody', password: 'nope' })).toBe('401');
    expect(await outcome({ name: 'nobody', password: 'nope' })).toBe('429 retry-after 1');
  });

  it('guessing one name from many addresses reaches its ceiling; the person, whose browser logged in before, still gets in', async () => {
    const earlier = await logIn({ name: 'fm', from: '192.0.2.1' });
    expect(earlier.statusCode).toBe(200);
    const device = deviceCookieOf(earlier);
    expect(device).toMatch(/^interlock_device=[^;]+; Max-Age=7776000; Path=\/api\/session; HttpOnly; SameSite=Strict$/);
    // Five guesses from five addresses: the ceiling of 5 an hour (this test's config).
    for (let i = 0; i < 5; i++) expect(await outcome({ name: 'fm', password: 'nope', from: `198.51.100.${i}` })).toBe('401');
    const refused = await logIn({ name: 'fm', from: '198.51.100.99' });
    expect([refused.statusCode, refused.headers['retry-after']]).toEqual([429, '720']);
    expect(refused.json().error.message).toContain('from browsers it has not logged in from');
    // The person's own browser, from a new address, with its cookie: in.
    expect(await outcome({ name: 'fm', from: '192.0.2.77', cookie: device!.split(';')[0] })).toBe('200');
    // A new browser of theirs waits like the guessers; another name's cookie does not help.
    expect(await outcome({ name: 'fm', from: '192.0.2.78' })).toMatch(/^429/);
    const bea = deviceCookieOf(await logIn({ name: 'bea', from: '192.0.2.1' }));
    expect(await outcome({ name: 'fm', from: '192.0.2.78', cookie: bea!.split(';')[0] })).toMatch(/^429/);
    // A forged or edited cookie does not help either.
    const [head, , , mac] = device!.split(';')[0]!.split('.');
    expect(await outcome({ name: 'fm', from: '192.0.2.79', cookie: `${head}.99999999999999.x.${mac}` })).toMatch(/^429/);
    // The ceiling drains: 12 minutes later one more attempt from anywhere may try.
    nowMs += 720_000;
    expect(await outcome({ name: 'fm', from: '198.51.100.100' })).toBe('200');
  });

  it('one address trying new names reaches its ceiling across names before any hash; the person with a device cookie still gets in', async () => {
    const device = deviceCookieOf(await logIn({ name: 'ops', from: '192.0.2.1' }))!.split(';')[0]!;
    // Eight first attempts at eight names from one address: the ceiling of 8 an hour (this test's config).
    for (let i = 0; i < 8; i++) expect(await outcome({ name: `guess${i}`, password: 'nope', from: '198.51.100.5' })).toBe('401');
    hashed.mockClear();
    const refused = await logIn({ name: 'guess8', password: 'nope', from: '198.51.100.5' });
    expect([refused.statusCode, refused.json().error.code, refused.headers['retry-after']]).toEqual([429, 'rate_limited', '450']);
    expect(refused.json().error.message).toBe(
      'too many failed logins from here, across names; try again in 8 minutes, or from a browser where this name has logged in before',
    );
    expect(hashed).not.toHaveBeenCalled();
    expect(await outcome({ name: 'ops', from: '198.51.100.5', cookie: device })).toBe('200');
    expect(await outcome({ name: 'bea', from: '198.51.100.6' })).toBe('200');
  });

  it('a device cookie past its age does not pass the ceiling', async () => {
    const device = deviceCookieOf(await logIn({ name: 'rita', from: '192.0.2.1' }))!.split(';')[0]!;
    nowMs += limits.deviceCookieMaxAgeMs;
    for (let i = 0; i < 5; i++) expect(await outcome({ name: 'rita', password: 'nope', from: `198.51.100.${i}` })).toBe('401');
    expect(await outcome({ name: 'rita', from: '192.0.2.2', cookie: device })).toMatch(/^429/);
  });
});
