import { SqliteGrants } from '../../db/grants.ts';
import { MemoryGrants } from '../../db/memory/grants.ts';
import type { Grants, GrantSight } from '../../db/port/grants.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { cleanUpDatabases, fakeClock, openTempDatabase } from '../support/db-journals.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { type GrantsEnv, grantsCases, T0 } from './grants.contract.ts';

const memory: ContractBackend<GrantsEnv> = {
  name: 'memory',
  make: () => {
    const clock = fakeClock(T0);
    const grants = new MemoryGrants({ nowMs: clock.wallClockMs });
    return { clock, grants, other: () => grants };
  },
};

/** Each connection is a database connection of its own on one file, as two processes have. */
const sqliteOn = (wrap: (grants: Grants) => Grants = (grants) => grants): ContractBackend<GrantsEnv> => ({
  name: 'SQLite',
  make: () => {
    const clock = fakeClock(T0);
    const opened = openTempDatabase();
    const connect = () => wrap(new SqliteGrants({ db: openTempDatabase(opened.file).db, nowMs: clock.wallClockMs }));
    return { clock, grants: connect(), other: connect };
  },
  cleanUp: cleanUpDatabases,
});

runContract('grants', grantsCases, [memory, sqliteOn()]);

/** A planted bad store: it remembers what it saw of a lease, so a revocation elsewhere goes unseen. */
class RememberingGrants implements Grants {
  readonly #seen = new Map<string, GrantSight>();
  constructor(private readonly inner: Grants) {}
  grant = (leaseId: string, terms?: object) => this.inner.grant(leaseId, terms);
  revoke = (leaseId: string) => this.inner.revoke(leaseId);
  describe = (lease: Json) => this.inner.describe(lease);
  async see(lease: Json, effect: JsonObject): Promise<GrantSight> {
    const key = JSON.stringify([lease, effect]);
    const known = this.#seen.get(key);
    if (known !== undefined) return known;
    const sight = await this.inner.see(lease, effect);
    this.#seen.set(key, sight);
    return sight;
  }
}

plantedFails('grants', grantsCases, ['a grant and a revocation made on another connection are seen by the next see', 'grants and revocations racing sees on two connections: every see after the revocation says not live'], {
  ...sqliteOn((grants) => new RememberingGrants(grants)),
  name: 'a store that remembers what it saw',
});

/** A planted bad store: it forgets the cap, so any amount is covered. */
class UncappedGrants extends MemoryGrants {
  override grant(leaseId: string, terms: { maxCents?: number | null; expiresAtMs?: number | null } = {}): Promise<void> {
    return super.grant(leaseId, { ...terms, maxCents: null });
  }
}

plantedFails('grants', grantsCases, ['a cap of 1000 cents covers only whole amounts from 1 to 1000 (never true, a string or a non-finite number)'], {
  name: 'a store that drops the cap',
  make: () => {
    const clock = fakeClock(T0);
    const grants = new UncappedGrants({ nowMs: clock.wallClockMs });
    return { clock, grants, other: () => grants };
  },
});
