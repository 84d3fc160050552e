import type { DerivedTables } from '../../db/port/derived.ts';
import { BoardSum } from './board-sum.ts';
import { type BoardFilter, type ChainFigures, inSlice, type Scoreboard } from './figures.ts';
import { effectiveFigures, REPAIRS_VIEW, SCORE_VIEW, storedRepair, storedScoreRow } from './table.ts';

// Slices of the board and the chains behind its charts, read from the scoreboard's table
// (table.ts) a page at a time, newest request first: a time range reads only the rows ordered in
// it. Each repair child's figures are read as the board counts them, its repairer looked up once.

/** Rows read per list call. */
const READ_ROWS = 1_000;

/** Every chain's figures as the board counts them, requested before `toMs` and from `fromMs` on when given (and those with no time among them). */
async function* chainsIn(tables: DerivedTables, fromMs?: number, toMs?: number): AsyncGenerator<ChainFigures> {
  const repairers = new Map<string, string | null>();
  // A key sorts after '' whatever it is: starting after (toMs, '') reads orders below toMs only.
  let after = toMs === undefined ? undefined : { order: toMs, key: '' };
  for (;;) {
    const rows = await tables.list(SCORE_VIEW, { direction: 'desc', limit: READ_ROWS, ...(after === undefined ? {} : { after }) });
    for (const stored of rows) {
      // A chain with no time is ordered by its first entry's seq: inSlice leaves it out of any time range.
      if (fromMs !== undefined && stored.order < fromMs) return;
      const row = storedScoreRow(stored);
      let repairer: string | null | undefined;
      if (row.repairKey !== null) {
        repairer = repairers.get(row.repairKey);
        if (repairer === undefined) {
          repairer = storedRepair(await tables.get(REPAIRS_VIEW, row.repairKey)).by;
          repairers.set(row.repairKey, repairer);
        }
      }
      yield effectiveFigures(row, repairer);
    }
    const last = rows.at(-1);
    if (last === undefined || rows.length < READ_ROWS) return;
    after = { order: last.order, key: last.key };
  }
}

/** A slice of the board, summed over the chains in it (`inSlice`), reading only the rows of its time range. */
export async function tableSlice(tables: DerivedTables, filter: BoardFilter): Promise<Scoreboard> {
  const sum = new BoardSum();
  for await (const f of chainsIn(tables, filter.fromMs, filter.toMs)) if (inSlice(f, filter)) sum.add(f);
  return sum.board();
}

/** Every chain's figures, newest request first. */
export async function tableChains(tables: DerivedTables): Promise<ChainFigures[]> {
  const all: ChainFigures[] = [];
  for await (const f of chainsIn(tables)) all.push(f);
  return all;
}
