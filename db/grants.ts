import { and, eq, isNull } from 'drizzle-orm';
import type { Checks } from '../shared/entries.ts';
import type { Json, JsonObject } from '../shared/json.ts';
import type { JournalDb } from './open.ts';
import { type GrantRow, grants } from './schema.ts';

/** How a grant is recorded on a send (`checks.lease`), which is what a receipt's lease check reads. */
export interface GrantDescription extends JsonObject {
  lease_id: string;
  max_cents: Json;
  /** When it was revoked (ms), or null while it stands. */
  revoked: Json;
  /** When it was (last) granted (ms). */
  granted: Json;
}

/** What a grant may bound: the largest amount it covers, and when it stops being live. */
export interface GrantTerms {
  /** The largest refund covered, in whole cents; absent or null for no cap. */
  maxCents?: number | null;
  /** The wall-clock instant (ms) from which the lease is no longer live; absent or null for never. */
  expiresAtMs?: number | null;
}

/**
 * Durable leases by id on the journal's database (spec §5.4 DurableLeases): a lease is live
 * while its grant exists, is not revoked and has not expired, and it covers an effect when the
 * grant has no cap or the effect's `amount` is a whole number of cents within it. Every value
 * read back is checked again, so a damaged or hand-edited row fails closed rather than open.
 */
// It has the shape of the gate's LeaseStore (see/reserve); db/ names no gate type, so the gate's
// callers check that shape where they hand it over.
export class SqliteGrants {
  readonly #db: JournalDb;
  readonly #nowMs: () => number;

  constructor(options: { db: JournalDb; nowMs: () => number }) {
    this.#db = options.db;
    this.#nowMs = options.nowMs;
  }

  /** Grant (or replace) a lease; a revocation it had is cleared. Refuses terms that could not be enforced. */
  grant(leaseId: string, terms: GrantTerms = {}): void {
    assertLeaseId(leaseId);
    const maxCents = terms.maxCents ?? null;
    const expiresAtMs = terms.expiresAtMs ?? null;
    if (maxCents !== null && !(Number.isSafeInteger(maxCents) && maxCents > 0)) {
      throw new TypeError(`maxCents must be a whole number of cents above 0, not ${String(maxCents)}`);
    }
    if (expiresAtMs !== null && !Number.isSafeInteger(expiresAtMs)) {
      throw new TypeError(`expiresAtMs must be a whole number of ms, not ${String(expiresAtMs)}`);
    }
    const row: GrantRow = { leaseId, maxCents, expiresAtMs, grantedAtMs: this.#now(), revokedAtMs: null };
    this.#db
      .insert(grants)
      .values(row)
      .onConflictDoUpdate({ target: grants.leaseId, set: { maxCents, expiresAtMs, grantedAtMs: row.grantedAtMs, revokedAtMs: null } })
      .run();
  }

  /** Revoke a lease; the first revocation's time stands. True when this call revoked it. */
  revoke(leaseId: string): boolean {
    assertLeaseId(leaseId);
    const result = this.#db
      .update(grants)
      .set({ revokedAtMs: this.#now() })
      .where(and(eq(grants.leaseId, leaseId), isNull(grants.revokedAtMs)))
      .run();
    return result.changes === 1;
  }

  /** The grant as recorded on a send, or null when the lease names none. */
  describe(lease: Json): GrantDescription | null {
    const row = this.#row(lease);
    if (row === undefined) return null;
    return {
      lease_id: row.leaseId,
      max_cents: asJson(row.maxCents),
      revoked: asJson(row.revokedAtMs),
      granted: asJson(row.grantedAtMs),
    };
  }

  see(lease: Json, effect: JsonObject): Pick<Checks, 'lease_live' | 'lease'> {
    const row = this.#row(lease);
    return { lease_live: row !== undefined && this.#covers(row, effect), lease: this.describe(lease) };
  }

  #covers(row: GrantRow, effect: JsonObject): boolean {
    if (row.revokedAtMs !== null) return false;
    const expiresAtMs: unknown = row.expiresAtMs;
    if (expiresAtMs !== null) {
      // A NaN, fractional or non-numeric expiry cannot be compared honestly: not live.
      if (typeof expiresAtMs !== 'number' || !Number.isSafeInteger(expiresAtMs)) return false;
      if (!(this.#now() < expiresAtMs)) return false;
    }
    const maxCents: unknown = row.maxCents;
    if (maxCents === null) return true;
    if (typeof maxCents !== 'number' || !Number.isSafeInteger(maxCents) || maxCents <= 0) return false;
    // typeof rules out booleans: `true` is never an amount of cents.
    const amount = effect.amount;
    return typeof amount === 'number' && Number.isSafeInteger(amount) && amount > 0 && amount <= maxCents;
  }

  #row(lease: Json): GrantRow | undefined {
    if (typeof lease !== 'string' || lease.length === 0) return undefined;
    return this.#db.select().from(grants).where(eq(grants.leaseId, lease)).get();
  }

  #now(): number {
    const nowMs = this.#nowMs();
    // A clock that is not a whole number of ms is our bug; comparing against it would decide nothing.
    if (!Number.isSafeInteger(nowMs)) throw new Error(`SqliteGrants: the clock read ${String(nowMs)}, not whole ms`);
    return nowMs;
  }
}

function assertLeaseId(leaseId: unknown): asserts leaseId is string {
  if (typeof leaseId !== 'string' || leaseId.length === 0) throw new TypeError('a lease id is a non-empty string');
}

/** A stored value as JSON for the record: numbers and strings as they are, anything else as text. */
function asJson(value: unknown): Json {
  if (value === null || typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  return String(value);
}
