import type { DerivedRow } from '../../db/port/derived.ts';
import type { ChainFigures, ChainTally } from './figures.ts';
import { damagedTable, figuresBody, storedFigures, storedStringOrNull } from './stored.ts';

// The scoreboard's derived tables. `scoreboard`: one row per chain of the inbox, keyed by effect
// id, ordered by when the request was made (the seq of its first entry for a chain with no time),
// its body what the chain alone gives: its figures with every wait it had, the repair key of a
// repair child and who made its first decision. Whether a child's first wait counts depends on who
// accepted the repair, another chain's decision: `scoreboard.repairs` keeps it by repair key, with
// the child it names, and a read applies it (`effectiveFigures`). The totals and the waits of the
// whole board are kept apart (totals.ts), so the board is read without reading every chain.

/** One row per chain of the inbox. */
export const SCORE_VIEW = 'scoreboard';
/** Who accepted each repair and the child request carrying it out, keyed by `repairKey`. */
export const REPAIRS_VIEW = 'scoreboard.repairs';

/** What a chain's row holds. */
export interface ScoreRow {
  /** The chain's figures with every wait it had: a repair child's first wait still in. */
  figures: ChainFigures;
  /** For a repair child, its key in `scoreboard.repairs`; null for a root. */
  repairKey: string | null;
  /** Who made the first decision when it ended a wait (`ChainTally.firstWaitDecidedBy`). */
  firstWaitBy: string | null;
}

/** A repair accepted, and the child request carrying it out, as far as the journal has told them. */
export interface RepairRow {
  by: string | null;
  child: string | null;
}

/** The row of a chain folded by `tally`, or null when the chain is not the inbox's. */
export function scoreRowOf(tally: ChainTally): ScoreRow | null {
  const figures = tally.figures(new Map());
  return figures === null ? null : { figures, repairKey: tally.repairChildKey, firstWaitBy: tally.firstWaitDecidedBy };
}

/** The table row of a chain whose first entry is at `headSeq`. */
export function scoreTableRow(effectId: string, row: ScoreRow, headSeq: number, open: boolean): DerivedRow {
  const body = { figures: figuresBody(row.figures), repairKey: row.repairKey, firstWaitBy: row.firstWaitBy };
  return { key: effectId, order: row.figures.requestedAtMs ?? headSeq, open, body };
}

/** The chain's figures as the board counts them, given who accepted the repair it carries out (if it is a child). */
export function effectiveFigures(row: ScoreRow, repairer: string | null | undefined): ChainFigures {
  const f = row.figures;
  // A repair child approved at once by the person who accepted the repair: nobody waited.
  const atOnce = row.repairKey !== null && row.firstWaitBy !== null && repairer === row.firstWaitBy;
  return atOnce ? { ...f, waitsMs: f.waitsMs.slice(1) } : f;
}

/** The chain's row a table row holds; a body that is none fails. */
export function storedScoreRow(stored: DerivedRow): ScoreRow {
  const where = `row ${stored.key}`;
  const figures = stored.body.figures;
  if (typeof figures !== 'object' || figures === null || Array.isArray(figures)) throw damagedTable(`${where} holds no figures`);
  return { figures: storedFigures(figures, where), repairKey: storedStringOrNull(stored.body, 'repairKey', where), firstWaitBy: storedStringOrNull(stored.body, 'firstWaitBy', where) };
}

/** The repair a table row holds (none: nothing known of it yet). */
export function storedRepair(stored: DerivedRow | null): RepairRow {
  if (stored === null) return { by: null, child: null };
  const where = `repair ${stored.key}`;
  return { by: storedStringOrNull(stored.body, 'by', where), child: storedStringOrNull(stored.body, 'child', where) };
}

/** The table row of a repair (none while nothing is known of it). */
export function repairTableRow(key: string, repair: RepairRow): DerivedRow | null {
  if (repair.by === null && repair.child === null) return null;
  return { key, order: 0, open: false, body: { by: repair.by, child: repair.child } };
}
