import type { Checks } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import type { GrantDescription, GrantTerms } from '../grants.ts';

/** Durable leases by id (spec §5.4 DurableLeases): live while granted, unrevoked and unexpired, within their cap. */
export interface Grants {
  grant(leaseId: string, terms?: GrantTerms): void;
  revoke(leaseId: string): boolean;
  describe(lease: Json): GrantDescription | null;
  see(lease: Json, effect: JsonObject): Pick<Checks, 'lease_live' | 'lease'>;
}
