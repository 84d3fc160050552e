import { describe, it } from 'vitest';
import type { JournalStore } from '../../server/journal/store.ts';
import type { FakeClock } from '../support/db-journals.ts';
import { appendCases } from './journal-appends.contract.ts';
import { batchCases } from './journal-batch.contract.ts';
import { claimCases } from './journal-claims.contract.ts';
import { concurrencyCases } from './journal-concurrency.contract.ts';
import { reservationCases } from './journal-reservations.contract.ts';
import { sealCases } from './journal-seals.contract.ts';

// The journal's contract: what every store of the journal must do, written once over a maker of
// stores. Each store (memory, SQLite, and the next) runs every case; the stores planted with a bug
// (journal.test.ts) show that the cases that matter fail on it.

/** What a case needs from a store: fresh, empty journals on a clock the case moves. */
export interface JournalMaker {
  name: string;
  /** A fresh, empty journal. */
  open(clock: FakeClock): JournalStore;
  /**
   * Two handles on one fresh journal whose calls may interleave: two connections on one file,
   * two clients of one server, or the same store twice where it has no other way in.
   */
  openTwo(clock: FakeClock): [JournalStore, JournalStore];
  /**
   * Race one OS process per owner on one fresh journal, released into `op` together; each
   * process's outcome in owner order, and a handle on the journal to inspect afterwards. Only for
   * a store that other processes can open.
   */
  race?(op: 'dispatch' | 'claim', effectId: string, owners: string[]): Promise<{ outcomes: Record<string, unknown>[]; journal: JournalStore }>;
}

/** One case of the contract: it throws (an expectation that fails) when the store breaks it. */
export type JournalCase = (maker: JournalMaker) => Promise<void>;

/** Every case of the contract, by name. */
export const journalCases: Readonly<Record<string, JournalCase>> = {
  ...appendCases,
  ...claimCases,
  ...reservationCases,
  ...concurrencyCases,
  ...batchCases,
  ...sealCases,
};

/** Register every case of the contract over `maker`'s stores. */
export function describeJournalContract(maker: JournalMaker): void {
  describe(`the journal contract: ${maker.name}`, () => {
    for (const [name, run] of Object.entries(journalCases)) {
      if (name.startsWith('across processes') && maker.race === undefined) continue;
      it(name, () => run(maker), 30_000);
    }
  });
}
