import type { DerivedTables } from '../../db/port/derived.ts';
import { BoardSum } from './board-sum.ts';
import { type BoardFilter, type ChainFigures, inSlice, type Scoreboard } from './figures.ts';
import { effectiveFigures, REPAIRS_VIEW, SCORE_VIEW, storedRepair, storedScoreRow } from './table.ts';

// Slices of the board and the chains behind its charts, read from the scoreboard's table
// (table.ts) a page at a time, newest request first: a time range reads only the rows ordered in
// it. Each repair child's figures are read as the board counts them, its repairer looked up once.

/** Rows read per list call, at most; the first call of a read asks for `FIRST_READ_ROWS`, each next one twice as many. */
const READ_ROWS = 1_000;
/** So a short range reads about its own rows: at most twice them past its start, and this many. */
const FIRST_READ_ROWS = 50;

/**
 * Every chain's figures as the board counts them, ordered below `toMs` and from `fromMs` on when
 * given, newest first: those requested in the range, and those with no time whose first seq is in it.
 */
export async function* chainsIn(tables: DerivedTables, fromMs?: number, toMs?: number): AsyncGenerator<ChainFigures> {
  const repairers = new Map<string, string | null>();
  // A key sorts after '' whatever it is: starting after (toMs, '') reads orders below toMs only.
  let after = toMs === undefined ? undefined : { order: toMs, key: '' };
  for (let limit = FIRST_READ_ROWS; ; limit = Math.min(READ_ROWS, 2 * limit)) {
    const rows = await tables.list(SCORE_VIEW, { direction: 'desc', limit, ...(after === undefined ? {} : { after }) });
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
    if (last === undefined || rows.length < limit) return;
    after = { order: last.order, key: last.key };
  }
}

/**
 * A slice of the board, summed over the chains in it (`inSlice`), reading only the rows of its time
 * range; each of those chains is given to `also` as well, for figures read beside the board.
 */
export async function tableSlice(tables: DerivedTables, filter: BoardFilter, also?: (f: ChainFigures) => void): Promise<Scoreboard> {
  const sum = new BoardSum();
  for await (const f of chainsIn(tables, filter.fromMs, filter.toMs)) {
    if (!inSlice(f, filter)) continue;
    sum.add(f);
    also?.(f);
  }
  return sum.board();
}

/**
 * The chains whose request has no time (a journal written before requests carried one), as the
 * board counts them. Their rows are ordered by their first entry's seq, at most the tables'
 * cursor, so only that range is read: with times in ms since 1970, no chain that has one.
 */
export async function* untimedChains(tables: DerivedTables): AsyncGenerator<ChainFigures> {
  const cursorSeq = (await tables.cursor())?.seq ?? 0;
  for await (const f of chainsIn(tables, 0, cursorSeq + 1)) if (f.requestedAtMs === null) yield f;
}

/** Every chain's figures, newest request first. */
export async function tableChains(tables: DerivedTables): Promise<ChainFigures[]> {
  const all: ChainFigures[] = [];
  for await (const f of chainsIn(tables)) all.push(f);
  return all;
}
