import type { InboxView } from '../inbox/view.ts';

export type ChainsMovedListener = (moved: ReadonlySet<string>, inbox: InboxView) => void;

/** Which chains moved since the last catch-up, kept only while someone watches, and told to the watchers after each catch-up. */
export class ChainsMoved {
  #moved = new Set<string>();
  readonly #listeners = new Set<ChainsMovedListener>();

  /** True while someone listens. */
  get watching(): boolean {
    return this.#listeners.size > 0;
  }

  /** A chain moved: kept while someone watches. */
  note(effectId: string): void {
    if (this.watching) this.#moved.add(effectId);
  }

  /** After a catch-up: tell the watchers which chains moved since the last one; false when none did. */
  tell(inbox: InboxView): boolean {
    if (this.#moved.size === 0) return false;
    const moved = this.#moved;
    this.#moved = new Set();
    for (const listener of this.#listeners) listener(moved, inbox);
    return true;
  }

  /** Add a listener; the answer removes it, and when it was the last, forgets what moved and calls `unwatched`. */
  listen(listener: ChainsMovedListener, unwatched: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
      if (this.watching) return;
      this.#moved.clear();
      unwatched();
    };
  }
}
