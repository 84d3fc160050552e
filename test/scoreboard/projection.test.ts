import { describe, expect, it } from 'vitest';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { ScoreboardProjection } from '../../server/scoreboard/projection.ts';
import { buildInboxWorld, HOUR_MS } from '../support/inbox-world.ts';

describe('scoreboard kept up to date', () => {
  it('equals a recomputation from the raw journal after every step of a busy day', async () => {
    const world = buildInboxWorld();
    const projection = new ScoreboardProjection('inbox');
    let seen = 0;
    const check = async () => {
      const all = (await world.journal.scan(0, 1_000_000)).map((s) => s.entry);
      for (const entry of all.slice(seen)) projection.note(entry);
      seen = all.length;
      expect(await projection.board()).toEqual(computeScoreboard(all, 'inbox'));
    };
    const requests = [20, 80, 30, 250, 90, 10].map((amount, i) => world.request(amount, i === 5 ? { flagged: true } : {}));
    for (const r of requests) {
      world.clock.nowMs += 60_000;
      await world.inbox.submit(r);
      await check();
    }
    world.clock.nowMs += 30 * 60_000;
    await world.inbox.approve(world.effectIdOf(requests[1]!), 'ana');
    await check();
    world.clock.nowMs += 5 * HOUR_MS;
    await world.inbox.tick();
    await check();
    await world.inbox.approve(world.effectIdOf(requests[3]!), 'fm');
    await world.inbox.reject(world.effectIdOf(requests[5]!), 'rita');
    await check();
    expect((await projection.board()).sla_breaches).toBeGreaterThan(0);
  });

  it('a slice by group or time counts only its chains', async () => {
    const world = buildInboxWorld();
    const projection = new ScoreboardProjection('inbox');
    world.clock.nowMs = 10_000;
    await world.inbox.submit(world.request(80));
    world.clock.nowMs = 20_000;
    await world.inbox.submit(world.request(250));
    for (const { entry } of await world.journal.scan(0, 1_000)) projection.note(entry);
    expect((await projection.slice({ group: 'controller' })).requests).toBe(1);
    expect((await projection.slice({ fromMs: 15_000 })).requests).toBe(1);
    expect((await projection.slice({})).requests).toBe(2);
  });

  it('builds every board from the entries it was given, never reading the journal again', async () => {
    const world = buildInboxWorld();
    const requests = [20, 80, 30, 250].map((amount) => world.request(amount));
    for (const r of requests) await world.inbox.submit(r);
    await world.inbox.approve(world.effectIdOf(requests[1]!), 'ana');
    const projection = new ScoreboardProjection('inbox');
    const all = (await world.journal.scan(0, 1_000_000)).map((s) => s.entry);
    for (const entry of all) projection.note(entry);
    expect(await projection.board()).toEqual(computeScoreboard(all, 'inbox'));
    expect((await projection.chains()).filter((f) => f.cleared)).toHaveLength(2);
  });
});
