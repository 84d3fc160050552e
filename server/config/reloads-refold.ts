import type { EntriesRefold } from '../integrity/derived-check.ts';
import { CONFIG_RELOADS_VIEW, reloadRow } from './reloads.ts';

// The config's reloads folded from the journal alone: a row per CONFIG entry, keyed by its seq,
// as the reloads' view writes it (reloads.ts `note`). What the reloads' table must hold for the
// chain they are on, for the background check of the tables (server/integrity/derived-check.ts).

/** The reloads' rows of a chain: one per CONFIG entry in it. */
export const configReloadsRefold: EntriesRefold = {
  view: CONFIG_RELOADS_VIEW,
  rowsOf(chain) {
    return chain.flatMap(({ seq, entry }) =>
      entry.kind === 'CONFIG' ? [reloadRow({ seq, atMs: entry.at_ms, sha256: entry.sha256, peopleAdded: entry.people_added, peopleRemoved: entry.people_removed })] : [],
    );
  },
};
