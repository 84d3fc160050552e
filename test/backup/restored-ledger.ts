import { EPOCH_CHAIN_ID, type Entry } from '../../shared/entries.ts';
import { isJsonObject } from '../../shared/json.ts';
import { has, isOpenDispatch } from '../../server/journal/chain.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';

/** A refund as Stripe holds it: enough to tie it to an effect. */
export interface LedgerRefund {
  id: string;
  metadata?: Record<string, string> | null;
}

/**
 * Design invariant 3 on a restored journal (the simulator's `checkLedger`, where a restore loses
 * the sends after its backup): every effect has at most one refund at Stripe; each refund's chain
 * holds what landed (COMMITTED, AMBIGUOUS or an open dispatch); and a refund whose chain shows no
 * send is one an epoch's first entry names as not in the backup, with the very refund id. Returns
 * the violations, empty when it holds.
 */
export function restoredLedgerViolations(entries: readonly Entry[], refunds: readonly LedgerRefund[]): string[] {
  const chains = new Map<string, Entry[]>();
  for (const entry of entries) chains.set(entry.effect_id, [...(chains.get(entry.effect_id) ?? []), entry]);
  const named = new Map<string, string>();
  for (const entry of chains.get(EPOCH_CHAIN_ID) ?? []) {
    if (entry.kind !== 'EPOCH') continue;
    const found = entry.stripe.refunds_not_in_backup;
    for (const refund of Array.isArray(found) ? found : []) {
      if (isJsonObject(refund) && typeof refund.effect_id === 'string' && typeof refund.refund === 'string') named.set(refund.effect_id, refund.refund);
    }
  }
  const violations: string[] = [];
  const byEffect = new Map<string, string[]>();
  for (const refund of refunds) {
    const effectId = refund.metadata?.[EFFECT_METADATA_KEY];
    if (effectId !== undefined) byEffect.set(effectId, [...(byEffect.get(effectId) ?? []), refund.id]);
  }
  for (const [effectId, ids] of byEffect) {
    if (ids.length > 1) violations.push(`never two refunds for one effect: ${effectId} has ${ids.join(', ')}`);
    const chain = chains.get(effectId) ?? [];
    if (!has(chain, 'COMMITTED') && !has(chain, 'AMBIGUOUS') && !isOpenDispatch(chain)) violations.push(`the journal holds what landed: ${effectId} has a refund but no COMMITTED`);
    if (!has(chain, 'DISPATCHED') && !ids.includes(named.get(effectId) ?? '')) {
      violations.push(`a refund the restored journal shows no send of is named by the epoch: ${effectId} is not`);
    }
  }
  return violations;
}
