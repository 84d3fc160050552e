import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

describe('scoreboard API', () => {
  it('needs a session; finance reads it; it equals a recomputation from the raw journal', async () => {
    expect((await world.app.inject({ method: 'GET', url: '/api/scoreboard' })).statusCode).toBe(401);
    for (const [id, amount] of [['s-1', 2_000], ['s-2', 8_000], ['s-3', 1_000]] as const) {
      const pi = await world.payment(10_000);
      await world.agent('POST', '/v1/refunds', { request_id: id, payment_intent: pi, amount });
    }
    const fin = await world.login('fin');
    const answer = await world.as(fin, 'GET', '/api/scoreboard');
    expect(answer.statusCode).toBe(200);
    const entries = (await world.services.journal.scan(0, 1_000_000)).map((s) => s.entry);
    expect(answer.json().board).toEqual(computeScoreboard(entries, 'inbox'));
    expect(answer.json().board).toMatchObject({ requests: 3, cleared_no_person: 2, escalated: 1, open: 1 });
    const csv = await world.as(fin, 'GET', '/api/scoreboard.csv');
    expect(csv.headers['content-type']).toMatch(/text\/csv/);
    expect(csv.body).toContain('"requests",3');
    const series = (await world.as(fin, 'GET', '/api/scoreboard/series')).json();
    expect(series.volume.reduce((n: number, p: { requests: number }) => n + p.requests, 0)).toBe(3);
    expect((await world.as(fin, 'GET', '/api/scoreboard?group=nope')).statusCode).toBe(400);
    expect((await world.as(fin, 'GET', '/api/scoreboard?group=ap-leads')).json().board.requests).toBe(1);
  });
});
