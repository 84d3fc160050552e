import { stringify } from 'yaml';
import { parseConfig } from '../../server/config/load.ts';
import type { InterlockConfig } from '../../server/config/schema.ts';

/** A real scrypt hash of `interlock-demo` at the default cost (ana's, from interlock.yaml). */
export const DEMO_PASSWORD_HASH = 'scrypt$16384$8$1$nt/uKuEqtc6vdHD/yYTycw==$Np8CF5dUL30DXvdoe/NYTR/5EsOD7Y0cw/HElQicqCM=';
/** sha256('sk_agent_demo_support_bot'). */
export const DEMO_TOKEN_SHA256 = '53b6ad39466f9cc8e863f0acb88a5b6d1aa4bdf4ebf324a146335a93b093f30f';

/** A config file's contents as plain data (snake_case, minutes), in the shape of inbox.md §20.4 in minor units of US dollars. */
export type FileConfig = Record<string, unknown> & {
  rules: Record<string, unknown>[];
  routes: Record<string, unknown>[];
  groups: Record<string, string[]>;
  people: Record<string, unknown>[];
  agents: Record<string, unknown>[];
};

const approver = (name: string) => ({ name, display_name: name.toUpperCase(), role: 'approver', password: DEMO_PASSWORD_HASH });

/** A fresh, valid file config: the §20.4 rules, groups and routes translated to minor units of US dollars and flags. */
export function buildFileConfig(): FileConfig {
  return {
    approval_max_age_minutes: 240,
    rules: [
      { name: 'amount under $50', kind: 'amount_at_most', amount: { usd: 5_000 } },
      { name: 'customer not flagged', kind: 'no_flags', flags: ['flagged'] },
      { name: 'payment not disputed', kind: 'not_disputed' },
      { name: 'amount fits what is left', kind: 'fits_remaining' },
    ],
    routes: [
      { name: 'flagged', when: { flags_any: ['flagged'] }, chain: ['risk'] },
      { name: 'crash', when: { reason_in: ['ambiguous', 'stale_premise_at_recovery', 'lease_at_recovery', 'target_error'] }, chain: ['payments-ops'] },
      { name: 'large', when: { amount_over: { usd: 20_000 } }, chain: ['controller', 'finance-manager'], sla_minutes: 240 },
      { name: 'default', chain: ['ap-leads', 'finance-manager'], sla_minutes: 240 },
    ],
    groups: { 'ap-leads': ['ana'], controller: ['cy'], 'finance-manager': ['fm'], 'payments-ops': ['ops'], risk: ['rita'] },
    people: [...['ana', 'cy', 'fm', 'ops', 'rita'].map(approver), { name: 'fin', display_name: 'Finance', role: 'finance', password: DEMO_PASSWORD_HASH }],
    agents: [{ name: 'support-bot', token_sha256: DEMO_TOKEN_SHA256 }],
    stripe: { mode: 'sandbox' },
  };
}

/** Parse a file config written out as YAML, the way the server reads it. */
export function parseFileConfig(file: unknown): InterlockConfig {
  return parseConfig(stringify(file), 'interlock.yaml');
}
