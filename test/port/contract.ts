import { afterEach, describe, it } from 'vitest';

// How a port's contract is written and run: named cases over an environment a backend makes
// (the store and a way to open a second connection onto it), run by every backend, and run
// against a planted bad store to show the cases can fail.

/** One contract case over a backend's environment. */
export type ContractCase<E> = (env: E) => Promise<void>;

/** A backend under a contract: its name, and how to make a fresh environment. */
export interface ContractBackend<E> {
  name: string;
  make(): E | Promise<E>;
  /** After each case: close what `make` opened. */
  cleanUp?(): void | Promise<void>;
}

/**
 * How long a case may take on a good store: the racing cases run many rounds over several
 * connections, which on a loaded 2-core machine took past vitest's 20 s.
 */
const CASE_TIMEOUT_MS = 60_000;

/** Run every case against each backend, each case on a fresh environment. */
export function runContract<E>(title: string, cases: Record<string, ContractCase<E>>, backends: readonly ContractBackend<E>[]): void {
  for (const backend of backends) {
    describe(`${title} contract: ${backend.name}`, () => {
      if (backend.cleanUp !== undefined) afterEach(backend.cleanUp);
      for (const [name, run] of Object.entries(cases)) it(name, async () => run(await backend.make()), CASE_TIMEOUT_MS);
    });
  }
}

/** The named cases must fail against a planted bad store: the contract can tell it from a good one. */
export function plantedFails<E>(title: string, cases: Record<string, ContractCase<E>>, names: readonly string[], planted: ContractBackend<E>): void {
  describe(`${title} contract fails against ${planted.name}`, () => {
    if (planted.cleanUp !== undefined) afterEach(planted.cleanUp);
    for (const name of names) {
      const run = cases[name];
      if (run === undefined) throw new Error(`no contract case named "${name}"`);
      it.fails(name, async () => run(await planted.make()));
    }
  });
}
