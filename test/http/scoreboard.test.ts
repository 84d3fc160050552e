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
    expect(csv.body).toContain('"requests",3\r\n');
    const series = (await world.as(fin, 'GET', '/api/scoreboard/series')).json();
    expect(series.volume.reduce((n: number, p: { requests: number }) => n + p.requests, 0)).toBe(3);
    expect((await world.as(fin, 'GET', '/api/scoreboard?group=nope')).statusCode).toBe(400);
    expect((await world.as(fin, 'GET', '/api/scoreboard?group=ap-leads')).json().board.requests).toBe(1);
  });
});

describe("an approver's scoreboard covers their own groups only; finance's every group", () => {
  // The attack: ana (ap-leads) asked the scoreboard for risk's figures, or narrowed the period to
  // one request's millisecond, and read an amount the ledger hides from her.
  let groups: AppWorld;
  let riskAtMs: number;
  beforeAll(async () => {
    groups = await buildAppWorld();
    const ask = async (requestId: string, amount: number, flags: string[] = []) => {
      const answer = await groups.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: await groups.payment(10_000), amount, flags });
      return answer.json().status as string;
    };
    expect(await ask('risk-1', 1_200, ['fraud_review'])).toBe('QUEUED');
    riskAtMs = (await (await groups.services.views.current()).ledger.page({}, { limit: 1 }, (login) => login)).rows[0]!.requested_at_ms!;
    groups.clock.advance(60_000);
    expect(await ask('ap-1', 8_000)).toBe('QUEUED');
    expect(await ask('policy-1', 1_000)).toBe('COMMITTED');
  });
  afterAll(async () => groups.close());

  const board = async (who: { cookie: string; csrf: string }, query = '') => {
    const answer = await groups.as(who, 'GET', `/api/scoreboard${query}`);
    return { status: answer.statusCode, code: answer.json().error?.code, board: answer.json().board, body: answer.body };
  };

  it.each(['/api/scoreboard', '/api/scoreboard.csv', '/api/scoreboard/series'])('%s?group=risk is 403 forbidden for ana, and names no figure of it', async (path) => {
    const ana = await groups.login('ana');
    const answer = await groups.as(ana, 'GET', `${path}?group=risk`);
    expect([answer.statusCode, answer.json().error?.code]).toEqual([403, 'forbidden']);
    expect(answer.body).not.toContain('1200');
    expect(answer.json().error.message).toBe("group: not one of your groups (ap-leads); an approver's scoreboard covers their own groups");
  });

  it("without a group, ana's figures are those of the requests ever routed to ap-leads: not risk's, not the rules' own", async () => {
    const ana = await groups.login('ana');
    const fin = await groups.login('fin');
    const hers = await board(ana);
    expect(hers.status).toBe(200);
    expect(hers.board).toEqual((await board(fin, '?group=ap-leads')).board);
    expect(hers.board).toMatchObject({ requests: 1, open: 1, cleared_no_person: 0 });
    expect(hers.board.money.usd).toMatchObject({ exposure_queued_minor: 8_000, refunded_minor: 0 });
    expect((await board(ana, '?group=ap-leads')).board).toEqual(hers.board);
  });

  it("a period one millisecond wide around risk's request shows ana nothing of it", async () => {
    const ana = await groups.login('ana');
    const narrow = await board(ana, `?from_ms=${riskAtMs}&to_ms=${riskAtMs + 1}`);
    expect(narrow.status).toBe(200);
    expect(narrow.board).toMatchObject({ requests: 0, open: 0 });
    expect(narrow.board.money).toEqual({});
    const fin = await groups.login('fin');
    expect((await board(fin, `?from_ms=${riskAtMs}&to_ms=${riskAtMs + 1}`)).board.money.usd.exposure_queued_minor).toBe(1_200);
  });

  it("ana's CSV and series are her groups' too; the series offers her own groups only", async () => {
    const ana = await groups.login('ana');
    const csv = await groups.as(ana, 'GET', '/api/scoreboard.csv');
    expect(csv.statusCode).toBe(200);
    expect(csv.body).toContain('"requests",1\r\n');
    expect(csv.body).toContain('"money.usd.exposure_queued_minor",8000\r\n');
    expect(csv.body).not.toContain('1200');
    const series = (await groups.as(ana, 'GET', '/api/scoreboard/series?from_ms=0')).json();
    expect(series.volume.reduce((n: number, p: { requests: number }) => n + p.requests, 0)).toBe(1);
    expect(series.groups).toEqual(['ap-leads']);
  });

  it("rita reads risk's figures; finance reads every group's, and every request without a group", async () => {
    const rita = await groups.login('rita');
    expect((await board(rita)).board).toMatchObject({ requests: 1, money: { usd: { exposure_queued_minor: 1_200 } } });
    expect((await board(rita, '?group=risk')).status).toBe(200);
    const fin = await groups.login('fin');
    expect((await board(fin, '?group=risk')).board.money.usd.exposure_queued_minor).toBe(1_200);
    expect((await board(fin)).board).toMatchObject({ requests: 3, money: { usd: { exposure_queued_minor: 9_200, refunded_minor: 1_000 } } });
    const series = (await groups.as(fin, 'GET', '/api/scoreboard/series?from_ms=0')).json();
    expect(series.groups).toEqual(['ap-leads', 'risk']);
  });
});
