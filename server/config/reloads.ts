import type { Entry } from '../../shared/entries.ts';

/** One reload of the config as the journal keeps it. */
export interface ConfigReload {
  seq: number;
  atMs: number;
  sha256: string;
  peopleAdded: readonly string[];
  peopleRemoved: readonly string[];
}

/**
 * The config's reloads, folded from the CONFIG entries: the file in force since the last one
 * (its SHA-256) and who came and went each time. A view like the others: a restart rebuilds it
 * from the journal alone.
 */
export class ConfigReloadsProjection {
  readonly #reloads: ConfigReload[] = [];

  note(entry: Entry, seq: number): void {
    if (entry.kind !== 'CONFIG') return;
    this.#reloads.push({ seq, atMs: entry.at_ms, sha256: entry.sha256, peopleAdded: entry.people_added, peopleRemoved: entry.people_removed });
  }

  /** Every reload, oldest first. */
  all(): readonly ConfigReload[] {
    return this.#reloads;
  }

  /** The last reload, or null when the config was never reloaded while running. */
  latest(): ConfigReload | null {
    return this.#reloads.at(-1) ?? null;
  }
}
