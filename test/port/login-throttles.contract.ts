import { expect } from 'vitest';
import { LOGIN_COUNT_KINDS, type LoginCountKind, type LoginThrottles } from '../../db/port/login-throttles.ts';
import { type LoginCheck, LoginThrottle } from '../../server/throttle/login-throttle.ts';
import { limits } from '../../shared/limits.ts';
import type { ContractCase } from './contract.ts';

// What every login-count store does (db/port/login-throttles.ts), through the throttle the login
// route asks (server/throttle/login-throttle.ts) on a clock the case moves: the same answers as the
// rules of server/throttle/login.ts give; two servers' throttles on one storage count each other's
// failures; failures sent at once are all counted; a store holds a bounded number of counts.

export interface LoginThrottlesEnv {
  store: LoginThrottles;
  /** Another connection onto the same storage (another server's store). */
  other(): LoginThrottles;
  /** A store on the same storage keeping at most `entriesMax` counts of each kind, and how many of a kind it keeps now. */
  bounded(entriesMax: number): { store: LoginThrottles; kept(kind: LoginCountKind): Promise<number> };
}

const T0 = 1_700_000_000_000;
const TRY: LoginCheck = { kind: 'try' };

/** Two servers' throttles over two stores of one storage, on one clock the case moves. */
function twoServers(env: LoginThrottlesEnv, rates = { failuresPerHour: 100, addressFailuresPerHour: 1_000 }) {
  let nowMs = T0;
  const options = { ...rates, wallMs: () => nowMs };
  return {
    a: new LoginThrottle({ ...options, store: env.store }),
    b: new LoginThrottle({ ...options, store: env.other() }),
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

export const loginThrottlesCases: Record<string, ContractCase<LoginThrottlesEnv>> = {
  'a failure makes that name wait 1 s from that address only; a success starts it again': async (env) => {
    const { a, advance } = twoServers(env);
    expect(await a.check('ana', '203.0.113.7', false)).toEqual(TRY);
    expect(await a.check('ana', '203.0.113.7', false)).toEqual({ kind: 'wait', waitMs: 1_000, why: 'address' });
    expect(await a.check('ana', '203.0.113.8', false)).toEqual(TRY);
    expect(await a.check('bea', '203.0.113.7', false)).toEqual(TRY);
    advance(1_000);
    expect(await a.check('ana', '203.0.113.7', false)).toEqual(TRY);
    await a.succeeded('ana', '203.0.113.7');
    expect(await a.check('ana', '203.0.113.7', false)).toEqual(TRY);
    expect(await a.check('ana', '203.0.113.7', false)).toEqual({ kind: 'wait', waitMs: 1_000, why: 'address' });
  },

  'the delay doubles with each failure in a row up to 15 minutes, and is forgotten a day after the last': async (env) => {
    const { a, advance } = twoServers(env);
    const waits: number[] = [];
    for (let i = 0; i < 12; i++) {
      expect(await a.check('cy', '203.0.113.7', true)).toEqual(TRY);
      const refused = await a.check('cy', '203.0.113.7', true);
      if (refused.kind !== 'wait') throw new Error(`attempt ${i} was not held`);
      waits.push(refused.waitMs / 1000);
      advance(refused.waitMs);
    }
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]);
    expect(await a.check('cy', '203.0.113.7', true)).toEqual(TRY);
    advance(limits.loginFailuresForgetMs);
    expect(await a.check('cy', '203.0.113.7', true)).toEqual(TRY);
    expect(await a.check('cy', '203.0.113.7', true)).toEqual({ kind: 'wait', waitMs: 1_000, why: 'address' });
  },

  'a name guessed from many addresses reaches its ceiling; a known device passes it; the count drains': async (env) => {
    const { a, advance } = twoServers(env, { failuresPerHour: 10, addressFailuresPerHour: 1_000 });
    for (let i = 0; i < 10; i++) expect(await a.check('ana', `198.51.100.${i}`, false)).toEqual(TRY);
    expect(await a.check('ana', '198.51.100.200', false)).toEqual({ kind: 'wait', waitMs: 360_000, why: 'name' });
    expect(await a.check('ana', '203.0.113.7', true)).toEqual(TRY);
    await a.succeeded('ana', '203.0.113.7');
    advance(359_999);
    expect(await a.check('ana', '198.51.100.201', false)).toMatchObject({ kind: 'wait', why: 'name' });
    advance(1);
    expect(await a.check('ana', '198.51.100.201', false)).toEqual(TRY);
  },

  'one address trying new names reaches its ceiling across names; a success takes back its own attempt only': async (env) => {
    const { a, advance } = twoServers(env, { failuresPerHour: 100, addressFailuresPerHour: 10 });
    for (let i = 0; i < 10; i++) expect(await a.check(`guess${i}`, '2001:db8:1:2::5', false)).toEqual(TRY);
    expect(await a.check('guess10', '2001:db8:1:2::99', false)).toEqual({ kind: 'wait', waitMs: 360_000, why: 'address-all-names' });
    expect(await a.check('ana', '2001:db8:1:2::7', true)).toEqual(TRY);
    await a.succeeded('ana', '2001:db8:1:2::7');
    expect(await a.check('guess12', '2001:db8:1:2::5', false)).toMatchObject({ kind: 'wait', why: 'address-all-names' });
    expect(await a.check('guess12', '2001:db8:1:3::5', false)).toEqual(TRY);
    advance(360_000);
    expect(await a.check('guess12', '2001:db8:1:2::5', false)).toEqual(TRY);
  },

  "two servers on one storage: failures on both lock the name out on both, and one's delay holds on the other": async (env) => {
    const { a, b } = twoServers(env, { failuresPerHour: 6, addressFailuresPerHour: 1_000 });
    for (let i = 0; i < 6; i++) expect(await (i % 2 === 0 ? a : b).check('ana', `198.51.100.${i}`, false)).toEqual(TRY);
    expect(await a.check('ana', '198.51.100.50', false)).toMatchObject({ kind: 'wait', why: 'name' });
    expect(await b.check('ana', '198.51.100.51', false)).toMatchObject({ kind: 'wait', why: 'name' });
    expect(await a.check('bea', '203.0.113.7', false)).toEqual(TRY);
    expect(await b.check('bea', '203.0.113.7', false)).toEqual({ kind: 'wait', waitMs: 1_000, why: 'address' });
    // A success on B takes back the attempt counted on A.
    expect(await b.check('ana', '203.0.113.9', true)).toEqual(TRY);
    await b.succeeded('ana', '203.0.113.9');
    expect(await a.check('ana', '203.0.113.9', true)).toEqual(TRY);
  },

  'failures sent at once to two servers are all counted: the ceiling lets exactly its number through': async (env) => {
    const { a, b } = twoServers(env, { failuresPerHour: 30, addressFailuresPerHour: 1_000 });
    const checks = Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).check('ana', `198.51.100.${i}`, false));
    const answers = await Promise.all(checks);
    expect(answers.filter((answer) => answer.kind === 'try').length).toBe(30);
    expect(await a.check('ana', '198.51.100.99', false)).toMatchObject({ kind: 'wait', why: 'name' });
  },

  'a store keeps at most its bound of counts of each kind, forgetting the least recently written': async (env) => {
    const { store, kept } = env.bounded(5);
    let nowMs = T0;
    const throttle = new LoginThrottle({ failuresPerHour: 100, addressFailuresPerHour: 1_000, wallMs: () => nowMs, store });
    for (let i = 0; i < 20; i++) {
      expect(await throttle.check(`guess${i}`, `198.51.100.${i}`, false)).toEqual(TRY);
      nowMs += 1;
    }
    for (const kind of LOGIN_COUNT_KINDS) expect(await kept(kind)).toBeLessThanOrEqual(5);
    // The newest are held; the oldest were forgotten, so they try again at once.
    expect(await throttle.check('guess19', '198.51.100.19', false)).toMatchObject({ kind: 'wait', why: 'address' });
    expect(await throttle.check('guess0', '198.51.100.0', false)).toEqual(TRY);
  },
};
