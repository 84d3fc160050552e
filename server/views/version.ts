/**
 * The version of the views' folds: the derived tables are tagged with it, and tables written under
 * another version are reset and rebuilt from the journal at start (server/views/views.ts). Bump it
 * whenever a fold below changes what a row holds; `test/tidy/views-version.test.ts` holds a digest
 * of each of these files and fails when one changes under the same version.
 */
export const VIEWS_VERSION = 'views-6';

/**
 * The tag the derived tables are written under: the folds' version and the inbox they fold for
 * (which requests have a ledger row depends on it), so tables written for another inbox, or by
 * other folds, are rebuilt at start rather than served.
 */
export function tablesVersion(inboxName: string): string {
  return `${VIEWS_VERSION}@${inboxName}`;
}

/**
 * The modules whose code decides the rows of a table-backed view: the ledger's, the inbox's and
 * the scoreboard's folds and what they fold on, the outbox's folds and rows, the config's reloads.
 * The tidy test pins these and every module they import code from.
 */
export const VIEWS_FOLD_MODULES: readonly string[] = [
  'server/ledger/chain.ts',
  'server/ledger/outcome.ts',
  'server/ledger/table.ts',
  'server/ledger/view.ts',
  'server/inbox/summary.ts',
  'server/inbox/view.ts',
  'server/inbox/projection.ts',
  'server/inbox/table.ts',
  'server/inbox/state.ts',
  'server/journal/chain.ts',
  'server/journal/confirmations.ts',
  'server/gate/leases.ts',
  'server/scoreboard/view.ts',
  'server/scoreboard/table.ts',
  'server/scoreboard/totals.ts',
  'server/scoreboard/figures.ts',
  'server/outbox/state.ts',
  'server/outbox/table.ts',
  'server/outbox/view.ts',
  'server/outbox/view-counts.ts',
  'server/config/reloads.ts',
];
