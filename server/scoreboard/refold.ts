import type { ViewRefold } from '../integrity/derived-check.ts';
import { ChainTally } from './figures.ts';
import { SCORE_VIEW, scoreRowOf, scoreTableRow } from './table.ts';

// The scoreboard's row of one chain, folded from the journal alone by the scoreboard's own tally:
// what its derived table must hold for that chain, for the background check of the tables
// (derived-check.ts). A row holds what its chain alone gives (table.ts), so one chain suffices.

/** The scoreboard's fold of a chain into its table row, for the chains of `inboxName`. */
export function scoreboardRefold(inboxName: string): ViewRefold {
  return {
    view: SCORE_VIEW,
    rowOf(chain) {
      const first = chain[0];
      if (first === undefined) return null;
      const tally = new ChainTally(first.entry, inboxName);
      for (const { entry } of chain) tally.push(entry);
      const row = scoreRowOf(tally);
      return row === null ? null : scoreTableRow(first.entry.effect_id, row, first.seq, !tally.settled);
    },
  };
}
