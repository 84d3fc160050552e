import type pg from 'pg';
import type { Json, JsonObject } from '../../shared/json.ts';
import { assertLeaseId, checkedTerms, describeGrant, type GrantRecord, leaseIdOf, sightOf, wholeMs } from '../grant-rules.ts';
import type { GrantDescription, Grants, GrantSight, GrantTerms } from '../port/grants.ts';
import { pgQuery } from './pool.ts';

// Durable leases on PostgreSQL, as db/grants.ts keeps them on SQLite (the rules in
// db/grant-rules.ts): each call one statement on the pool, committed on its own, so a grant or
// revocation one server makes is seen by the next `see` of every other.

const SELECT_GRANT =
  'SELECT lease_id AS "leaseId", max_cents AS "maxCents", expires_at_ms AS "expiresAtMs", granted_at_ms AS "grantedAtMs", revoked_at_ms AS "revokedAtMs" FROM grants WHERE lease_id = $1';

/** Durable leases by id in a PostgreSQL database, shared by every server on it. */
export class PgGrants implements Grants {
  readonly #pool: pg.Pool;
  readonly #nowMs: () => number;

  constructor(options: { pool: pg.Pool; nowMs: () => number }) {
    this.#pool = options.pool;
    this.#nowMs = options.nowMs;
  }

  /** Run one statement on the pool; its errors come out as the port's. */
  protected query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return pgQuery<R>(this.#pool, text, values);
  }

  async grant(leaseId: string, terms: GrantTerms = {}): Promise<void> {
    const { maxCents, expiresAtMs } = checkedTerms(leaseId, terms);
    // One upsert: two servers granting one lease at once both succeed, the later one standing.
    await this.query(
      'INSERT INTO grants (lease_id, max_cents, expires_at_ms, granted_at_ms, revoked_at_ms) VALUES ($1, $2, $3, $4, NULL) ' +
        'ON CONFLICT (lease_id) DO UPDATE SET max_cents = excluded.max_cents, expires_at_ms = excluded.expires_at_ms, granted_at_ms = excluded.granted_at_ms, revoked_at_ms = NULL',
      [leaseId, maxCents, expiresAtMs, this.now()],
    );
  }

  async revoke(leaseId: string): Promise<boolean> {
    assertLeaseId(leaseId);
    // Under READ COMMITTED a second revocation waits for the first, then finds it revoked: the
    // first revocation's time stands, and only one call is told it revoked.
    const result = await this.query('UPDATE grants SET revoked_at_ms = $2 WHERE lease_id = $1 AND revoked_at_ms IS NULL', [leaseId, this.now()]);
    return result.rowCount === 1;
  }

  async describe(lease: Json): Promise<GrantDescription | null> {
    return describeGrant(await this.#row(lease));
  }

  async see(lease: Json, effect: JsonObject): Promise<GrantSight> {
    return sightOf(await this.#row(lease), effect, () => this.now());
  }

  async #row(lease: Json): Promise<GrantRecord | null> {
    const leaseId = leaseIdOf(lease);
    if (leaseId === null) return null;
    return (await this.query<GrantRecord>(SELECT_GRANT, [leaseId])).rows[0] ?? null;
  }

  /** The clock, read as whole ms. */
  protected now(): number {
    return wholeMs(this.#nowMs(), 'PgGrants');
  }
}
