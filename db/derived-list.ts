import { and, asc, desc, eq, gt, gte, lt, lte, or, type SQL, sql } from 'drizzle-orm';
import type { JournalDb } from './open.ts';
import type { DerivedListOptions } from './port/derived.ts';
import { derivedRows } from './schema.ts';

// A page of one view's rows, as `DerivedTables.list` reads it: a statement prepared once for each
// shape of the options (direction, open or not, a start, an end), its values bound at each call.
// A start loads every open item's messages by a range each, so building and preparing the query
// at every call was most of its time (0.6 s of a 2.9 s start over 100k entries).

const p = {
  view: sql.placeholder('view'),
  open: sql.placeholder('open'),
  afterOrd: sql.placeholder('afterOrd'),
  afterKey: sql.placeholder('afterKey'),
  beforeOrd: sql.placeholder('beforeOrd'),
  beforeKey: sql.placeholder('beforeKey'),
  limit: sql.placeholder('limit'),
};

/** A page's values, named as the statement's placeholders. */
type ListValues = Record<keyof typeof p, string | number>;

function prepareList(db: JournalDb, ascending: boolean, open: boolean, after: boolean, before: boolean) {
  const where: SQL[] = [eq(derivedRows.view, p.view)];
  if (open) where.push(eq(derivedRows.open, p.open));
  if (after) {
    // Keyset: a range on ord the index seeks to, then past the rows of the same ord up to the key.
    const [from, past] = ascending ? [gte, gt] : [lte, lt];
    where.push(from(derivedRows.ord, p.afterOrd), or(past(derivedRows.ord, p.afterOrd), past(derivedRows.key, p.afterKey))!);
  }
  if (before) {
    // The same keyset the other way: up to the row's ord, and short of its key there.
    const [to, short] = ascending ? [lte, lt] : [gte, gt];
    where.push(to(derivedRows.ord, p.beforeOrd), or(short(derivedRows.ord, p.beforeOrd), short(derivedRows.key, p.beforeKey))!);
  }
  const order = ascending ? [asc(derivedRows.ord), asc(derivedRows.key)] : [desc(derivedRows.ord), desc(derivedRows.key)];
  return db
    .select({ key: derivedRows.key, ord: derivedRows.ord, open: derivedRows.open, body: derivedRows.body })
    .from(derivedRows)
    .where(and(...where))
    .orderBy(...order)
    .limit(p.limit)
    .prepare();
}

type ListStatement = ReturnType<typeof prepareList>;

/** The list statements of one connection, each prepared at its first use. */
export class ListStatements {
  readonly #db: JournalDb;
  readonly #prepared = new Map<string, ListStatement>();

  constructor(db: JournalDb) {
    this.#db = db;
  }

  /** The rows of `view` the options select, in their order. */
  rows(view: string, options: DerivedListOptions): Array<{ key: string; ord: number; open: number; body: string }> {
    const ascending = options.direction === 'asc';
    const { after, before } = options;
    const shape = `${ascending ? 'asc' : 'desc'}:${options.open !== undefined}:${after !== undefined}:${before !== undefined}`;
    let statement = this.#prepared.get(shape);
    if (statement === undefined) {
      statement = prepareList(this.#db, ascending, options.open !== undefined, after !== undefined, before !== undefined);
      this.#prepared.set(shape, statement);
    }
    const values: ListValues = {
      view,
      open: options.open ? 1 : 0,
      afterOrd: after?.order ?? 0,
      afterKey: after?.key ?? '',
      beforeOrd: before?.order ?? 0,
      beforeKey: before?.key ?? '',
      limit: options.limit,
    };
    return statement.all(values);
  }
}
