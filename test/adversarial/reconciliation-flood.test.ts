import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconciliationRun } from '../../shared/api.ts';
import { limits } from '../../shared/limits.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack: any session (finance included) starts reconciliation runs for many periods, each a
// millisecond apart. A run lists every payment Interlock has seen and holds the journal's refunds
// in memory; the dedup was per period only and a running run is never forgotten, so each POST
// started one more background run and kept it: work and memory without bound from one login.

const DAY_MS = 86_400_000;
const PAYMENTS = 8;
const STARTS = 25;

let world: AppWorld;
let period: { from_ms: number; to_ms: number };

beforeAll(async () => {
  world = await buildAppWorld();
  const now = world.clock.wallMs();
  period = { from_ms: now - DAY_MS, to_ms: now + DAY_MS };
  for (let i = 0; i < PAYMENTS; i++) {
    const answer = await world.agent('POST', '/v1/refunds', { request_id: `flood-${i}`, payment_intent: await world.payment(5_000), amount: 1_000 });
    expect(answer.json().status).toBe('COMMITTED');
  }
}, 60_000);
afterAll(async () => {
  await settle();
  await world.close();
});

async function runs(): Promise<ReconciliationRun[]> {
  const fin = await world.login('fin');
  return (await world.as(fin, 'GET', '/api/reconciliation')).json().runs;
}

/** Every run kept has finished. */
async function settle(): Promise<void> {
  for (let i = 0; i < 600 && (await runs()).some((run) => run.state === 'running'); i++) await new Promise((r) => setTimeout(r, 50));
}

describe('reconciliation runs started in a flood', () => {
  it('at most reconcileRunsRunningMax run at once; a start past it is 429 rate_limited, starts nothing and keeps nothing', async () => {
    const fin = await world.login('fin');
    const ana = await world.login('fin'); // a second finance session: the bound is the server's
    const answers: { status: number; code: string | undefined; id: string | undefined; retryAfter: unknown }[] = [];
    for (let i = 0; i < STARTS; i++) {
      const who = i % 2 === 0 ? fin : ana;
      const answer = await world.as(who, 'POST', '/api/reconciliation', { from_ms: period.from_ms + i, to_ms: period.to_ms });
      answers.push({ status: answer.statusCode, code: answer.json().error?.code, id: answer.json().id, retryAfter: answer.headers['retry-after'] });
    }
    // A run that ends during the flood frees its place for a later start (one did on a loaded
    // machine): at least the bound started, and most of the flood was refused.
    const started = answers.filter((a) => a.status === 202);
    expect(started.length).toBeGreaterThanOrEqual(limits.reconcileRunsRunningMax);
    expect(started.length).toBeLessThan(STARTS / 2);
    const refused = answers.filter((a) => a.status !== 202);
    expect(refused.every((a) => a.status === 429 && a.code === 'rate_limited' && a.retryAfter !== undefined)).toBe(true);
    const kept = await runs();
    expect(kept.filter((run) => run.state === 'running').length).toBeLessThanOrEqual(limits.reconcileRunsRunningMax);
    expect(kept.map((run) => run.id).sort()).toEqual(started.map((a) => a.id).sort());
    // Once they finish, the next start is taken.
    await settle();
    const next = await world.as(ana, 'POST', '/api/reconciliation', { from_ms: period.from_ms + STARTS, to_ms: period.to_ms });
    expect(next.statusCode).toBe(202);
  }, 60_000);

  it('an agent token or no session starts nothing', async () => {
    const before = (await runs()).length;
    const byAgent = await world.agent('POST', '/api/reconciliation', { from_ms: period.from_ms, to_ms: period.to_ms });
    const byNobody = await world.app.inject({ method: 'POST', url: '/api/reconciliation', payload: { from_ms: period.from_ms, to_ms: period.to_ms } });
    expect([byAgent.statusCode, byNobody.statusCode]).toEqual([401, 401]);
    expect((await runs()).length).toBe(before);
  });
});
