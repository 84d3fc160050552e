import type { InterlockConfig } from './schema.ts';

/**
 * The config in force. A reload replaces it whole, in one assignment, so a reader sees the old
 * config or the new and never a mix of both; readers ask for `current` each time rather than keep
 * a copy, so nothing goes on deciding on a config that was replaced.
 */
export class LiveConfig {
  #current: InterlockConfig;

  constructor(initial: InterlockConfig) {
    this.#current = initial;
  }

  get current(): InterlockConfig {
    return this.#current;
  }

  /** Put `next` in force; the one place the config changes while running. */
  replace(next: InterlockConfig): void {
    this.#current = next;
  }
}
