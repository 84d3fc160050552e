import { describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { decisionTimes } from '../../server/scoreboard/board-sum.ts';
import { tableDecisionTimes, waitChanges } from '../../server/scoreboard/totals.ts';

const MINUTE_MS = 60_000;

// Time to decision read from the wait counts (by hour, minute, second and value) is the figure
// every wait sorted in memory gives: the median of an even count the mean of its two middle
// waits, p90 the ceil(0.9 n)-th, the max the last, through waits added and taken away.

/** Tables of wait counts, moved batch by batch as the views move them. */
class Waits {
  readonly tables = new MemoryDerivedTables();
  readonly all: number[] = [];
  #seq = 0;

  async move(added: readonly number[], removed: readonly number[] = []): Promise<void> {
    const moved = new Map<number, number>();
    for (const wait of added) moved.set(wait, (moved.get(wait) ?? 0) + 1);
    for (const wait of removed) moved.set(wait, (moved.get(wait) ?? 0) - 1);
    for (const wait of added) this.all.push(wait);
    for (const wait of removed) this.all.splice(this.all.indexOf(wait), 1);
    const changes = await waitChanges(this.tables, moved);
    const to = { seq: this.#seq + 1, globalHash: 'h', size: this.#seq + 1, version: 'test' };
    expect(await this.tables.advance({ fromSeq: this.#seq, to, changes })).toBe(true);
    this.#seq += 1;
  }

  async expectSameFigures(): Promise<void> {
    expect(await tableDecisionTimes(this.tables, this.all.length)).toEqual(decisionTimes([...this.all].sort((a, b) => a - b)));
  }
}

describe('time to decision from the wait counts', () => {
  it('none, one and two waits: nulls, the wait itself, the mean of both', async () => {
    const waits = new Waits();
    await waits.expectSameFigures();
    await waits.move([90_001]);
    await waits.expectSameFigures();
    await waits.move([3]);
    await waits.expectSameFigures();
    expect((await tableDecisionTimes(waits.tables, 2)).median_ms).toBe(45_002);
  });

  it('thousands of waits over days, with ties, within one minute and across minutes, added and taken away', async () => {
    const waits = new Waits();
    let state = 7;
    const random = () => {
      state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
      return state / 2_147_483_648;
    };
    for (let batch = 0; batch < 12; batch++) {
      const added = Array.from({ length: 300 }, (_, i) => (i % 10 === 0 ? 5 * MINUTE_MS + (i % 3) : Math.floor(Math.exp(random() * 19))));
      const removed = batch === 0 ? [] : waits.all.filter((_, i) => i % 17 === batch);
      await waits.move(added, removed);
      await waits.expectSameFigures();
    }
    // Every wait in one minute, and one on a minute's first and last ms.
    const one = new Waits();
    await one.move([MINUTE_MS, 2 * MINUTE_MS - 1, ...Array.from({ length: 99 }, (_, i) => MINUTE_MS + 500 + i)]);
    await one.expectSameFigures();
  });

  it('a count taken to zero leaves no row behind, and the figures stand on the waits left', async () => {
    const waits = new Waits();
    await waits.move([1_000, 2_000, 2_000, 400_000]);
    await waits.move([], [400_000, 2_000]);
    await waits.expectSameFigures();
    expect((await waits.tables.digests()).map(({ view, rows }) => [view, rows])).toEqual([
      ['scoreboard.waits', 2],
      ['scoreboard.waits.h', 1],
      ['scoreboard.waits.m', 1],
      ['scoreboard.waits.s', 2],
    ]);
  });
});
