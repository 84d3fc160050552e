import type { Json, JsonObject } from '../../shared/json.ts';

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

/** What a grant says of an effect: whether the lease is live and covers it, and the grant as recorded. */
export interface GrantSight {
  lease_live: boolean;
  lease: GrantDescription | null;
}

/**
 * Durable leases by id (spec §5.4 DurableLeases): a lease is live while its grant exists, is not
 * revoked and has not expired, and it covers an effect when the grant has no cap or the effect's
 * `amount` is a whole number of cents within it. Every value read back is checked again, so a
 * damaged row fails closed rather than open. It has the shape of the gate's LeaseStore (`see`).
 */
export interface Grants {
  /** Grant (or replace) a lease; a revocation it had is cleared. Refuses terms that could not be enforced. */
  grant(leaseId: string, terms?: GrantTerms): Promise<void>;
  /** Revoke a lease; the first revocation's time stands. True when this call revoked it. */
  revoke(leaseId: string): Promise<boolean>;
  /** The grant as recorded on a send, or null when the lease names none. */
  describe(lease: Json): Promise<GrantDescription | null>;
  see(lease: Json, effect: JsonObject): Promise<GrantSight>;
}
