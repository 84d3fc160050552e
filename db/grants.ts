import { and, eq, isNull } from 'drizzle-orm';
import type { Json, JsonObject } from '../shared/json.ts';
import { assertLeaseId, checkedTerms, describeGrant, type GrantRecord, leaseIdOf, sightOf, wholeMs } from './grant-rules.ts';
import { onConnection } from './connection.ts';
import type { JournalDb } from './open.ts';
import type { GrantDescription, Grants, GrantSight, GrantTerms } from './port/grants.ts';
import { grants } from './schema.ts';

export type { GrantDescription, GrantTerms } from './port/grants.ts';

/**
 * Durable leases by id on the journal's database (spec §5.4 DurableLeases; the rules in
 * `grant-rules.ts`). Each call is one statement, so a grant or revocation another process makes
 * is seen by the next `see`.
 */
export class SqliteGrants implements Grants {
  readonly #db: JournalDb;
  readonly #nowMs: () => number;

  constructor(options: { db: JournalDb; nowMs: () => number }) {
    this.#db = options.db;
    this.#nowMs = options.nowMs;
  }

  /** Run `fn` on the journal's connection, under its lock (`onConnection`). */
  #locked<T>(fn: () => Promise<T>): Promise<T> {
    return onConnection(this.#db.$client, fn);
  }

  grant(leaseId: string, terms: GrantTerms = {}): Promise<void> {
    return this.#locked(async () => {
      const checked = checkedTerms(leaseId, terms);
      const grantedAtMs = this.#now();
      const { maxCents, expiresAtMs } = checked;
      this.#db
        .insert(grants)
        .values({ ...checked, grantedAtMs, revokedAtMs: null })
        .onConflictDoUpdate({ target: grants.leaseId, set: { maxCents, expiresAtMs, grantedAtMs, revokedAtMs: null } })
        .run();
    });
  }

  revoke(leaseId: string): Promise<boolean> {
    return this.#locked(async () => {
      assertLeaseId(leaseId);
      const result = this.#db
        .update(grants)
        .set({ revokedAtMs: this.#now() })
        .where(and(eq(grants.leaseId, leaseId), isNull(grants.revokedAtMs)))
        .run();
      return result.changes === 1;
    });
  }

  describe(lease: Json): Promise<GrantDescription | null> {
    return this.#locked(async () => {
      return describeGrant(this.#row(lease));
    });
  }

  see(lease: Json, effect: JsonObject): Promise<GrantSight> {
    return this.#locked(async () => {
      return sightOf(this.#row(lease), effect, () => this.#now());
    });
  }

  #row(lease: Json): GrantRecord | null {
    const leaseId = leaseIdOf(lease);
    if (leaseId === null) return null;
    return this.#db.select().from(grants).where(eq(grants.leaseId, leaseId)).get() ?? null;
  }

  #now(): number {
    return wholeMs(this.#nowMs(), 'SqliteGrants');
  }
}
