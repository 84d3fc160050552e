import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// A restart on the derived tables the first server wrote: the scoreboard's board, CSV and series
// are answered from them, byte for byte as before, with no chain tallied in memory at start.

const tables = new MemoryDerivedTables();
let world: AppWorld;
let restarted: AppWorld | null = null;
beforeAll(async () => {
  world = await buildAppWorld({ derived: tables });
  const ask = async (requestId: string, amount: number, flags: string[] = []) => {
    const answer = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: await world.payment(10_000), amount, flags });
    return answer.json() as { status: string; effect_id: string };
  };
  const decide = async (effectId: string, how: (escalation: string) => Promise<string>) => {
    world.clock.advance(7 * 60_000);
    const escalation = (await world.services.journal.entries(effectId)).findLast((entry) => entry.kind === 'ESCALATED')!.hash;
    return how(escalation);
  };
  await ask('board-policy-1', 1_000);
  await ask('board-policy-2', 1_100);
  await ask('board-queued', 1_200, ['fraud_review']);
  const rejected = await ask('board-rejected', 1_300, ['fraud_review']);
  const approved = await ask('board-approved', 1_400, ['fraud_review']);
  expect(await decide(rejected.effect_id, (seen) => world.services.inbox.reject(rejected.effect_id, 'rita', { seen }))).toBe('REJECTED');
  expect(await decide(approved.effect_id, (seen) => world.services.inbox.approve(approved.effect_id, 'rita', { seen }))).toBe('COMMITTED');
});
afterAll(async () => {
  await restarted?.close();
  await world.close();
});

/** Each answer's bytes, but the time it was answered at (the application clock runs on). */
async function answers(w: AppWorld): Promise<string[]> {
  const fin = await w.login('fin');
  // A range that holds every request, whatever either clock reads.
  const toMs = 9_000_000_000_000;
  const paths = ['/api/scoreboard', '/api/scoreboard.csv', '/api/scoreboard?group=risk', `/api/scoreboard?from_ms=0&to_ms=${toMs}`, `/api/scoreboard/series?from_ms=0&to_ms=${toMs}`];
  const bodies: string[] = [];
  for (const path of paths) {
    const answer = await w.as(fin, 'GET', path);
    expect(answer.statusCode).toBe(200);
    bodies.push(answer.body.replace(/"now_ms":\d+/, '"now_ms":0'));
  }
  return bodies;
}

describe('the scoreboard across a restart on its derived tables', () => {
  it('answers the board, its CSV, slices and series as before, with no chain tallied at start', async () => {
    const before = await answers(world);
    const board = JSON.parse(before[0]!).board;
    expect(board).toMatchObject({ requests: 5, cleared_no_person: 2, rejected: 1, open: 1 });
    expect(board.time_to_decision.n).toBe(2);
    restarted = await buildAppWorld({ dir: world.dir, clock: world.clock, sandbox: world.sandbox, derived: tables });
    expect(await answers(restarted)).toEqual(before);
    expect((await restarted.services.views.current()).scoreboard.heldChains).toBe(0);
  });
});
