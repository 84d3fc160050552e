import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.ts';

/**
 * Held while start-up still checks the journal behind a server that already listens (the derived
 * tables rebuilt at start): every journal route waits for it, so nothing is read from, written to
 * or shown of a journal before the whole check (the replay, then the checkpoints) has held it. A
 * journal the check refuses answers the waiting requests 503 not_ready, as the server stops.
 */
export class StartGate {
  #held: Promise<void> | null = null;
  #settle: ((refused: boolean) => void) | null = null;

  /** What a journal route waits for now; null while nothing is held. */
  get held(): Promise<void> | null {
    return this.#held;
  }

  /** Hold journal routes until `open` or `refuse`. */
  hold(): void {
    if (this.#held !== null) return;
    this.#held = new Promise<void>((resolve, reject) => {
      this.#settle = (refused) => (refused ? reject(new AppError('not_ready', 'start-up refused the journal; this server is stopping')) : resolve());
    });
    // Nobody may be waiting when it is refused.
    this.#held.catch(() => {});
  }

  /** The check held the journal: let them through. */
  open(): void {
    this.#release(false);
  }

  /** The check refused the journal: answer them 503 not_ready. */
  refuse(): void {
    this.#release(true);
  }

  #release(refused: boolean): void {
    this.#settle?.(refused);
    this.#held = null;
    this.#settle = null;
  }
}

/**
 * Every route of `scope` shows or changes what the journal holds: before any of its handlers runs,
 * the views catch up with everything durable, so a row anywhere in the journal that fails its
 * check is found first and the request is answered 503 journal_unavailable, with nothing read,
 * shown, written or sent. A route added to such a scope cannot forget it. Routes that show nothing
 * of the journal (health, the keys, the document, logging in, the directory) live outside one.
 * While start-up holds `gate` (its check still runs behind a listening server), they wait for it first.
 */
export function requireJournal(scope: FastifyInstance, views: { current(): Promise<unknown> }, gate?: StartGate): void {
  scope.addHook('preHandler', async () => {
    const held = gate?.held;
    if (held) await held;
    await views.current();
  });
}
