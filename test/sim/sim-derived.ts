import type { DerivedBatch, DerivedCursor, DerivedDigest, DerivedListOptions, DerivedRow, DerivedSnapshot, DerivedTables, DigestMark } from '../../db/port/derived.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import type { Life } from './sim-journal.ts';

// The derived tables as the simulated processes see them: one MemoryDerivedTables per world, kept
// through every crash as a table file is, and reached by each process through its own handle.

/** Every call one of the tables' methods gets, passed on to `tables`. */
class PassingOn implements DerivedTables {
  constructor(protected readonly tables: DerivedTables) {}

  cursor(): Promise<DerivedCursor | null> {
    return this.tables.cursor();
  }

  advance(batch: DerivedBatch): Promise<boolean> {
    return this.tables.advance(batch);
  }

  reset(version: string): Promise<void> {
    return this.tables.reset(version);
  }

  get(view: string, key: string): Promise<DerivedRow | null> {
    return this.tables.get(view, key);
  }

  list(view: string, options: DerivedListOptions): Promise<DerivedRow[]> {
    return this.tables.list(view, options);
  }

  digests(): Promise<DerivedDigest[]> {
    return this.tables.digests();
  }

  marks(): Promise<DigestMark[]> {
    return this.tables.marks();
  }

  newestMark(): Promise<DigestMark | null> {
    return this.tables.newestMark();
  }

  snapshot(): Promise<DerivedSnapshot> {
    return this.tables.snapshot();
  }
}

/**
 * A process's handle on the shared tables: every call of a dead process throws SimulatedCrash
 * (as its journal's do, sim-journal.ts), so a process that died writes nothing after it died.
 */
export class ProcessTables extends PassingOn {
  constructor(
    tables: DerivedTables,
    private readonly life: Life,
  ) {
    super(tables);
  }

  private async alive<T>(run: () => Promise<T>): Promise<T> {
    if (this.life.dead) throw new SimulatedCrash('the process is dead');
    return run();
  }

  override cursor(): Promise<DerivedCursor | null> {
    return this.alive(() => super.cursor());
  }

  override advance(batch: DerivedBatch): Promise<boolean> {
    return this.alive(() => super.advance(batch));
  }

  override reset(version: string): Promise<void> {
    return this.alive(() => super.reset(version));
  }

  override get(view: string, key: string): Promise<DerivedRow | null> {
    return this.alive(() => super.get(view, key));
  }

  override list(view: string, options: DerivedListOptions): Promise<DerivedRow[]> {
    return this.alive(() => super.list(view, options));
  }

  override digests(): Promise<DerivedDigest[]> {
    return this.alive(() => super.digests());
  }

  override marks(): Promise<DigestMark[]> {
    return this.alive(() => super.marks());
  }

  override newestMark(): Promise<DigestMark | null> {
    return this.alive(() => super.newestMark());
  }

  override snapshot(): Promise<DerivedSnapshot> {
    return this.alive(() => super.snapshot());
  }
}

/** A body with its first field (by name) left out: what the planted bug `drop_field_on_load` reads. */
function withoutAField(row: DerivedRow): DerivedRow {
  const [dropped] = Object.keys(row.body).sort();
  if (dropped === undefined) return row;
  const { [dropped]: _, ...body } = row.body;
  return { ...row, body };
}

/**
 * The planted bug `drop_field_on_load`: tables loaded after a restart whose reads of the ledger's
 * open work (`list` of the open rows) and of one row (`get`) answer each body short of a field.
 * (The scoreboard reads every field of what it loads by name, and refuses a short body at once.)
 */
export class DroppingAField extends PassingOn {
  override async get(view: string, key: string): Promise<DerivedRow | null> {
    const row = await super.get(view, key);
    return row === null || view !== 'ledger' ? row : withoutAField(row);
  }

  override async list(view: string, options: DerivedListOptions): Promise<DerivedRow[]> {
    const rows = await super.list(view, options);
    return options.open === true && view === 'ledger' ? rows.map(withoutAField) : rows;
  }
}
