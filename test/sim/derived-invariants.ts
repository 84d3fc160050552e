import { EMPTY_DIGEST, moveDigestBy, rowHash } from '../../db/derived-digest.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { DerivedCursor, DerivedDigest, DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import { rebuildViews } from '../../server/views/rebuild.ts';
import { Views } from '../../server/views/views.ts';
import { caughtUp } from './process.ts';
import { DroppingAField } from './sim-derived.ts';
import { CONFIG, type World } from './world.ts';

// The derived tables agree three ways at the end of a seed: the tables the seed's processes wrote
// as they went (through every crash and restart, over the one MemoryDerivedTables of the world),
// tables rebuilt from scratch from the seed's final journal, and a copy of the tables taken
// mid-run loaded by a new server over the final journal (its open work read from the copy, the
// journal's tail replayed into it). Each view's digest as the store keeps it and as its rows read
// back must be one and the same, and every cursor must stand at the journal's end.

/** One of the three tables compared, as the check read it. */
interface Compared {
  name: 'incremental' | 'rebuilt' | 'loaded';
  cursor: DerivedCursor | null;
  /** Each view's digest as the store keeps it. */
  stored: ReadonlyMap<string, DerivedDigest>;
  /** Each view's digest recomputed from its rows as a reader is answered them (open rows, then closed). */
  read: ReadonlyMap<string, DerivedDigest>;
}

/** How many rows one read of a list asks for. */
const PAGE = 500;

/** A view's digest recomputed from the rows `tables` lists: open ones, then the others. */
async function readDigest(tables: DerivedTables, view: string): Promise<DerivedDigest> {
  let sum = EMPTY_DIGEST;
  let rows = 0;
  for (const open of [true, false]) {
    let after: { order: number; key: string } | undefined;
    for (;;) {
      const page: DerivedRow[] = await tables.list(view, { direction: 'asc', limit: PAGE, open, ...(after === undefined ? {} : { after }) });
      for (const row of page) sum = moveDigestBy(sum, rowHash(view, row), null);
      rows += page.length;
      const last = page.at(-1);
      if (last === undefined || page.length < PAGE) break;
      after = { order: last.order, key: last.key };
    }
  }
  return { view, sum, rows };
}

async function compared(name: Compared['name'], tables: DerivedTables, views: readonly string[]): Promise<Compared> {
  const stored = new Map((await tables.digests()).map((digest) => [digest.view, digest]));
  const read = new Map<string, DerivedDigest>();
  for (const view of new Set([...views, ...stored.keys()])) read.set(view, await readDigest(tables, view));
  return { name, cursor: await tables.cursor(), stored, read };
}

const NO_ROWS = (view: string): DerivedDigest => ({ view, sum: EMPTY_DIGEST, rows: 0 });
const shown = (digest: DerivedDigest) => `${digest.sum} (${digest.rows} rows)`;

/**
 * Compare the three tables at the end of a seed; `copy` is the copy of the world's tables taken
 * mid-run (null when none was: the tables were never written before the end), loaded here by a
 * new server over the final journal. The planted bug `drop_field_on_load` reads the copy through
 * DroppingAField.
 */
export async function checkDerivedTables(world: World, copy: MemoryDerivedTables | null): Promise<void> {
  if ((await caughtUp(world)) === undefined) return;
  world.hit('check.derived');
  const rebuilt = new MemoryDerivedTables();
  const loaded = copy ?? new MemoryDerivedTables();
  const loading: DerivedTables = world.options.plant === 'drop_field_on_load' ? new DroppingAField(loaded) : loaded;
  try {
    await rebuildViews({ journal: world.journal, tables: rebuilt, inboxName: CONFIG.inboxName, clockMs: () => world.clock.wallMs });
    const failed = (_fields: object, message: string) => world.violation(`the views loaded over a copy of the derived tables failed: ${message}`);
    const views = new Views({ journal: world.journal, inboxName: CONFIG.inboxName, nowMs: () => world.clock.wallMs, log: { fatal: failed, error: failed }, derived: loading });
    const corrupt = await views.replayAtStart();
    if (corrupt !== null) throw corrupt;
  } catch (error) {
    world.violation(`the derived tables are rebuilt and loaded from the final journal: ${(error as Error).name}: ${(error as Error).message}`);
    return;
  }
  if (copy !== null && ((await copy.cursor())?.seq ?? 0) > 0) world.hit('check.derived_loaded');
  const names = [...new Set([...(await world.derived.digests()), ...(await rebuilt.digests()), ...(await loaded.digests())].map((d) => d.view))].sort();
  const all = [await compared('incremental', world.derived, names), await compared('rebuilt', rebuilt, names), await compared('loaded', loading, names)];
  const end = all[1]!.cursor;
  for (const { name, cursor } of all) {
    if (cursor?.seq !== end?.seq || cursor?.globalHash !== end?.globalHash) {
      world.violation(`the derived tables stand where the journal ends: the ${name} tables' cursor is at seq ${cursor?.seq ?? 'none'}, the journal ends at seq ${end?.seq ?? 'none'}`);
    }
  }
  for (const view of names) {
    world.hit('check.derived_view');
    const expected = all[0]!.stored.get(view) ?? NO_ROWS(view);
    const agree = all.every((c) => [c.stored.get(view) ?? NO_ROWS(view), c.read.get(view) ?? NO_ROWS(view)].every((d) => d.sum === expected.sum && d.rows === expected.rows));
    if (agree) continue;
    const said = all.map((c) => {
      const stored = c.stored.get(view) ?? NO_ROWS(view);
      const read = c.read.get(view) ?? NO_ROWS(view);
      return `${c.name} ${shown(stored)}${read.sum === stored.sum && read.rows === stored.rows ? '' : `, its rows read back ${shown(read)}`}`;
    });
    world.violation(`the derived tables agree three ways: ${view} differs (${said.join('; ')})`);
  }
  await checkMarks(world, rebuilt);
}

/** The digests the world's tables and the rebuilt ones marked at the same seq are the same. */
async function checkMarks(world: World, rebuilt: DerivedTables): Promise<void> {
  const marked = new Map((await rebuilt.marks()).map((mark) => [mark.seq, mark]));
  for (const mark of await world.derived.marks()) {
    const other = marked.get(mark.seq);
    if (other === undefined) continue;
    world.hit('check.derived_marks');
    if (JSON.stringify(mark.digests) !== JSON.stringify(other.digests) || mark.globalHash !== other.globalHash) {
      world.violation(`the digests marked at seq ${mark.seq} agree: incremental ${JSON.stringify(mark.digests)}, rebuilt ${JSON.stringify(other.digests)}`);
    }
  }
}
