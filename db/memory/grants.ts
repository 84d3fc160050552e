import type { Json, JsonObject } from '../../shared/json.ts';
import { assertLeaseId, checkedTerms, describeGrant, type GrantRecord, leaseIdOf, sightOf, wholeMs } from '../grant-rules.ts';
import type { GrantDescription, Grants, GrantSight, GrantTerms } from '../port/grants.ts';

/** Grants in memory, for tests and the simulator: the rules of `grant-rules.ts` over a map. */
export class MemoryGrants implements Grants {
  readonly #rows = new Map<string, GrantRecord>();
  readonly #nowMs: () => number;

  constructor(options: { nowMs: () => number }) {
    this.#nowMs = options.nowMs;
  }

  async grant(leaseId: string, terms: GrantTerms = {}): Promise<void> {
    const checked = checkedTerms(leaseId, terms);
    this.#rows.set(leaseId, { ...checked, grantedAtMs: this.#now(), revokedAtMs: null });
  }

  async revoke(leaseId: string): Promise<boolean> {
    assertLeaseId(leaseId);
    const row = this.#rows.get(leaseId);
    if (row === undefined || row.revokedAtMs !== null) return false;
    this.#rows.set(leaseId, { ...row, revokedAtMs: this.#now() });
    return true;
  }

  async describe(lease: Json): Promise<GrantDescription | null> {
    return describeGrant(this.#row(lease));
  }

  async see(lease: Json, effect: JsonObject): Promise<GrantSight> {
    return sightOf(this.#row(lease), effect, () => this.#now());
  }

  #row(lease: Json): GrantRecord | null {
    const leaseId = leaseIdOf(lease);
    return leaseId === null ? null : (this.#rows.get(leaseId) ?? null);
  }

  #now(): number {
    return wholeMs(this.#nowMs(), 'MemoryGrants');
  }
}
