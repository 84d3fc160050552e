import type { DerivedDigest, DerivedTables } from '../../db/port/derived.ts';
import type { JournalStore } from '../journal/store.ts';
import { tablesVersion } from './version.ts';
import { Views } from './views.ts';

/** What a rebuild did: the entries it replayed, how long it took, and the tables' digests then. */
export interface Rebuilt {
  entries: number;
  seconds: number;
  /** Where the tables' cursor stands after it. */
  seq: number;
  version: string;
  digests: DerivedDigest[];
}

/**
 * Reset the derived tables and rebuild them from the journal, as a start does when they are
 * missing: every entry replayed and verified by the views' follower, a batch a page. A journal
 * that fails the follower's checks is thrown (its `JournalCorruptError`); the tables then hold the
 * batches written before it, a start goes on from there.
 */
export async function rebuildViews(options: { journal: JournalStore; tables: DerivedTables; inboxName: string; clockMs?: () => number }): Promise<Rebuilt> {
  const clockMs = options.clockMs ?? (() => performance.now());
  const started = clockMs();
  await options.tables.reset(tablesVersion(options.inboxName));
  const views = new Views({ journal: options.journal, inboxName: options.inboxName, nowMs: () => Date.now(), log: { fatal: () => {}, error: () => {} }, derived: options.tables });
  const corrupt = await views.replayAtStart();
  if (corrupt !== null) throw corrupt;
  const cursor = await options.tables.cursor();
  return {
    entries: views.head?.size ?? 0,
    seconds: (clockMs() - started) / 1_000,
    seq: cursor?.seq ?? 0,
    version: cursor?.version ?? tablesVersion(options.inboxName),
    digests: await options.tables.digests(),
  };
}
