import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { MemoryJournal } from '../../db/journal-memory.ts';
import type { DerivedTables } from '../../db/port/derived.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { Entry } from '../../shared/entries.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { type BoardFilter, type ChainFigures, computeScoreboard } from '../../server/scoreboard/figures.ts';
import { ScoreboardProjection } from '../../server/scoreboard/projection.ts';
import type { ScoreboardView } from '../../server/scoreboard/view.ts';
import { rebuildViews } from '../../server/views/rebuild.ts';
import { Views } from '../../server/views/views.ts';
import { buildInboxWorld, HOUR_MS } from '../support/inbox-world.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';

// The scoreboard read from its derived tables: memory holds the chains that can still move, the
// board is read from its totals and wait counts, slices and charts from the chains' rows; a server
// started again on the same SQLite file, and tables rebuilt from the journal, answer the same as
// the whole-journal fold (ScoreboardProjection) does.

const dir = mkdtempSync(join(tmpdir(), 'interlock-scoreboard-table-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const quiet = { fatal: () => {}, error: () => {} };
const viewsOn = (journal: JournalStore, derived: DerivedTables) => new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived });

/** A journal that counts the chains read from it, by effect id. */
class CountingJournal extends MemoryJournal {
  readonly reads: string[] = [];
  override async entries(effectId: string): Promise<Entry[]> {
    this.reads.push(effectId);
    return super.entries(effectId);
  }
}

const entriesOf = async (journal: JournalStore) => (await journal.scan(0, 1_000_000)).map(({ entry }) => entry);

/** The whole-journal fold of the scoreboard, as every start replayed it before its tables. */
async function foldedWhole(journal: JournalStore): Promise<ScoreboardProjection> {
  const projection = new ScoreboardProjection('inbox');
  for (const entry of await entriesOf(journal)) if (entry.kind !== 'CONFIG' && entry.kind !== 'EPOCH') projection.note(entry);
  return projection;
}

/** Chains' figures in one order, whatever order they were read in. */
const sortedChains = (chains: ChainFigures[]) => chains.map((f) => JSON.stringify(f, Object.keys(f).sort())).sort();

/** What the scoreboard answers: the board, slices by group and time, and the chains behind the charts. */
async function answers(scoreboard: Pick<ScoreboardView, 'board' | 'slice' | 'chains'>, slices: readonly BoardFilter[]) {
  return {
    board: JSON.stringify(await scoreboard.board()),
    slices: await Promise.all(slices.map(async (filter) => JSON.stringify(await scoreboard.slice(filter)))),
    chains: sortedChains(await scoreboard.chains()),
  };
}

describe('the scoreboard from its derived tables', () => {
  it('after 1,200 settled requests memory holds only the 30 still open; every answer is the whole-journal fold’s', async () => {
    const journal = new MemoryJournal({ wallClockMs: () => 0 });
    await journal.appendSealed(Array.from({ length: 1_230 }, (_, i) => refundChain(i + 1, i < 1_200 ? ['succeeded'] : [])).flat());
    const views = viewsOn(journal, new MemoryDerivedTables());
    await views.current();
    const { scoreboard } = await views.current();
    expect(scoreboard.heldChains).toBe(30);
    const whole = await foldedWhole(journal);
    const slices: BoardFilter[] = [{ group: 'ap-leads' }, { fromMs: 1_796_198_700_000 + 600 * 10_000 }, { toMs: 1_796_198_700_000 + 100 * 10_000 + 5 }];
    expect(await answers(scoreboard, slices)).toEqual(await answers(whole, slices));
    expect(await scoreboard.board()).toEqual(computeScoreboard(await entriesOf(journal), 'inbox'));
  });

  it('a settled chain leaves memory; a late word from Stripe folds it again from the journal, once for every view', async () => {
    const journal = new CountingJournal({ wallClockMs: () => 0 });
    const late = refundChain(1, ['succeeded', 'failed']);
    await journal.appendSealed([...late.slice(0, 5), ...refundChain(2)]);
    const views = viewsOn(journal, new MemoryDerivedTables());
    await views.current();
    expect((await views.current()).scoreboard.heldChains).toBe(1);
    await journal.appendSealed(late.slice(5));
    const { scoreboard } = await views.current();
    expect(journal.reads).toEqual([refundEffectId(1)]);
    const board = await scoreboard.board();
    expect(board).toEqual(computeScoreboard(await entriesOf(journal), 'inbox'));
    expect(board.money.usd?.failed_at_stripe_minor).toBe(2_000);
    expect((await views.current()).scoreboard.heldChains).toBe(1);
  });

  it('a restart on the same SQLite file, and tables rebuilt from the journal, answer the same board, slices and chains', async () => {
    const file = join(dir, 'restart.sqlite');
    const storage = await openStorage({ file });
    const journal = storage.journal({ wallClockMs: () => Date.now() });
    const world = buildInboxWorld({ journal });
    // A day: requests the policy clears, some escalated, decided after waits of minutes to hours, one past its deadline.
    const requests = Array.from({ length: 24 }, (_, i) => world.request([20, 80, 250, 30][i % 4]!, i % 7 === 3 ? { flagged: true } : {}));
    for (const [i, r] of requests.entries()) {
      world.clock.nowMs += 60_000 * (1 + (i % 5));
      await world.inbox.submit(r);
    }
    for (const [i, r] of requests.entries()) {
      world.clock.nowMs += 7 * 60_000 + i * 1_013;
      if (i % 4 === 1) await world.inbox.approve(world.effectIdOf(r), 'ana');
      if (i % 7 === 3) await world.inbox.reject(world.effectIdOf(r), 'rita');
      if (i === 10) {
        world.clock.nowMs += 5 * HOUR_MS;
        await world.inbox.tick();
      }
    }
    await journal.appendSealed(Array.from({ length: 300 }, (_, i) => refundChain(i + 1, i % 2 === 0 ? ['succeeded'] : [])).flat());
    const whole = await foldedWhole(journal);
    const startMs = (await whole.chains()).flatMap((f) => (f.requestedAtMs === null ? [] : [f.requestedAtMs])).sort((a, b) => a - b);
    const slices: BoardFilter[] = [{ group: 'ap-leads' }, { group: 'risk' }, { fromMs: startMs[5]!, toMs: startMs[20]! }, { fromMs: startMs[30]! }, { group: 'ap-leads', within: ['ap-leads'] }];
    const expected = await answers(whole, slices);
    expect((await whole.board()).time_to_decision.n).toBeGreaterThan(5);
    expect((await whole.board()).sla_breaches).toBeGreaterThan(0);

    const first = viewsOn(journal, storage.derived);
    expect(await first.replayAtStart()).toBeNull();
    expect(await answers((await first.current()).scoreboard, slices)).toEqual(expected);
    const digests = await storage.derived.digests();
    await storage.close();

    const again = await openStorage({ file });
    try {
      const restarted = viewsOn(again.journal({ wallClockMs: () => Date.now() }), again.derived);
      expect(await restarted.replayAtStart()).toBeNull();
      const { scoreboard } = await restarted.current();
      expect(scoreboard.heldChains).toBe(0);
      expect(await again.derived.digests()).toEqual(digests);
      expect(await answers(scoreboard, slices)).toEqual(expected);

      // Stripe's word on two refunds open at the restart: their chains alone are folded again, and the answers move with them.
      await again.journal({ wallClockMs: () => Date.now() }).appendSealed([...refundChain(2, ['succeeded']).slice(4), ...refundChain(4, ['failed']).slice(4)]);
      const moved = await answers((await restarted.current()).scoreboard, slices);
      expect(moved).toEqual(await answers(await foldedWhole(again.journal({ wallClockMs: () => Date.now() })), slices));
      expect(moved.board).not.toEqual(expected.board);
      expect((await restarted.current()).scoreboard.heldChains).toBe(0);

      const rebuilt = new MemoryDerivedTables();
      expect((await rebuildViews({ journal: again.journal({ wallClockMs: () => Date.now() }), tables: rebuilt, inboxName: 'inbox' })).digests).toEqual(await again.derived.digests());
      const fromRebuilt = viewsOn(again.journal({ wallClockMs: () => Date.now() }), rebuilt);
      expect(await answers((await fromRebuilt.current()).scoreboard, slices)).toEqual(moved);
    } finally {
      await again.close();
    }
  });
});
