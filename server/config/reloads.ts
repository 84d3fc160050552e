import type { DerivedChange, DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import type { Entry } from '../../shared/entries.ts';
import type { Json } from '../../shared/json.ts';

/** One reload of the config as the journal keeps it. */
export interface ConfigReload {
  seq: number;
  atMs: number;
  sha256: string;
  peopleAdded: readonly string[];
  peopleRemoved: readonly string[];
}

/** The reloads' view name in the derived tables: one row per CONFIG entry, ordered by its seq. */
export const CONFIG_RELOADS_VIEW = 'config.reloads';

/** Rows read at once. */
const PAGE = 500;

/** Seqs in keys, padded so that keys sort as the seqs do. */
const SEQ_DIGITS = 16;

export function reloadRow(reload: ConfigReload): DerivedRow {
  const { seq, atMs, sha256, peopleAdded, peopleRemoved } = reload;
  return { key: String(seq).padStart(SEQ_DIGITS, '0'), order: seq, open: false, body: { seq, atMs, sha256, peopleAdded: [...peopleAdded], peopleRemoved: [...peopleRemoved] } };
}

/** A reload as its row holds it, read back field by field. */
function reloadOf(row: DerivedRow): ConfigReload {
  const { atMs, sha256, peopleAdded, peopleRemoved } = row.body;
  const names = (value: Json | undefined) => (Array.isArray(value) ? value.filter((name): name is string => typeof name === 'string') : []);
  return { seq: row.order, atMs: typeof atMs === 'number' ? atMs : 0, sha256: typeof sha256 === 'string' ? sha256 : '', peopleAdded: names(peopleAdded), peopleRemoved: names(peopleRemoved) };
}

export interface ConfigReloadsOptions {
  tables: DerivedTables;
  /** Where the tables' cursor stands, as far as the views know: entries at or below it are in the tables. */
  tablesSeq: () => number;
}

/**
 * The config's reloads, folded from the CONFIG entries: the file in force since the last one
 * (its SHA-256) and who came and went each time. Kept in a derived table, a row per reload; memory
 * holds the last one only (read from the table at start), and the whole list is read from the table.
 */
export class ConfigReloadsView {
  readonly #options: ConfigReloadsOptions;
  #latest: ConfigReload | null = null;
  #loadedAt = 0;
  #unwritten: ConfigReload[] = [];

  constructor(options: ConfigReloadsOptions) {
    this.#options = options;
  }

  async load(seq: number): Promise<void> {
    this.#loadedAt = seq;
    if (seq === 0) return;
    const [last] = await this.#options.tables.list(CONFIG_RELOADS_VIEW, { direction: 'desc', limit: 1 });
    this.#latest = last === undefined ? null : reloadOf(last);
  }

  note(entry: Entry, seq: number): void {
    if (entry.kind !== 'CONFIG' || seq <= this.#loadedAt) return;
    const reload = { seq, atMs: entry.at_ms, sha256: entry.sha256, peopleAdded: entry.people_added, peopleRemoved: entry.people_removed };
    this.#latest = reload;
    if (seq > this.#options.tablesSeq()) this.#unwritten.push(reload);
  }

  async settle(): Promise<void> {}

  changes(): DerivedChange[] {
    return this.#unwritten.map((reload) => {
      const row = reloadRow(reload);
      return { view: CONFIG_RELOADS_VIEW, key: row.key, row };
    });
  }

  written(): void {
    this.#unwritten = [];
  }

  /** Every reload, oldest first, read from the table. */
  async all(): Promise<ConfigReload[]> {
    const reloads: ConfigReload[] = [];
    let after: { order: number; key: string } | undefined;
    for (;;) {
      const rows = await this.#options.tables.list(CONFIG_RELOADS_VIEW, { direction: 'asc', limit: PAGE, ...(after === undefined ? {} : { after }) });
      reloads.push(...rows.map(reloadOf));
      if (rows.length < PAGE) return reloads;
      const last = rows.at(-1)!;
      after = { order: last.order, key: last.key };
    }
  }

  /** The last reload, or null when the config was never reloaded while running. */
  latest(): ConfigReload | null {
    return this.#latest;
  }
}
