import type { ItemDetail, } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import { diffFacts } from '../gate/premises.ts';
import { signReceipt } from '../receipts/receipts.ts';
import { verifyReceipt } from '../receipts/verify.ts';
import { summaryItem } from '../inbox/summary.ts';
import type { InboxProjection } from '../inbox/projection.ts';
import { boundRequest, chainState } from '../inbox/state.ts';
import type { Services } from '../services.ts';

/** Facts recorded when the request was first decided on. */
function factsThen(chain: readonly Entry[]): JsonObject {
  const first = chain.find((e) => e.kind === 'PROPOSED');
  return first && isJsonObject(first.premises) ? first.premises : {};
}

/**
 * Everything the item page shows, read from the journal, with the facts read from Stripe now.
 * `inbox` is the projection as `views.current()` gave it, caught up.
 */
export async function itemDetail(
  services: Services,
  inbox: InboxProjection,
  effectId: string,
  chain: Entry[],
  mayDecide: (group: string) => boolean,
): Promise<ItemDetail> {
  const request = boundRequest(chain);
  // Only chains the inbox owns are shown, and each binds its request in its first PROPOSED.
  if (request === null) throw new Error(`item ${effectId} has no bound request`);
  const summary = inbox.chains.get(effectId);
  const item = summary ? summaryItem(summary) : null;
  const then = factsThen(chain);
  let now: JsonObject | null = null;
  let nowError: string | null = null;
  try {
    now = await services.target.capture(String(request.payment_intent), effectId);
  } catch {
    nowError = 'Stripe could not be read just now; the facts below are the ones recorded';
  }
  const receipt = signReceipt(effectId, chain, services.signingKey);
  const report = await verifyReceipt(receipt, new Map([[services.signingKey.keyId, services.signingKey.publicKeyPem]]));
  return {
    effect_id: effectId,
    request,
    state: chainState(chain),
    item,
    facts_then: then,
    facts_now: now,
    facts_now_error: nowError,
    changes: now ? diffFacts(then, now) : [],
    history: chain,
    verification: report,
    receipt: `/api/items/${effectId}/receipt`,
    may_decide: item !== null && mayDecide(item.group),
  };
}
