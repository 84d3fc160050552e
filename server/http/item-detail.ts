import type { ApprovalBlock, ApprovalShown, ApprovalsShown, HistoryApproval, ItemDetail, PaymentPanel } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { PageReadsSpentError } from '../facts/payment-panel.ts';
import { askedOnFacts, changesSinceAsked } from '../inbox/escalation.ts';
import { signReceipt } from '../receipts/receipts.ts';
import { verifyReceipt } from '../receipts/verify.ts';
import { openItem } from '../inbox/rule-words-before.ts';
import type { InboxView } from '../inbox/view.ts';
import { boundRequest, chainState } from '../inbox/state.ts';
import { approvalHistory, approvalStanding, decideApproval } from '../inbox/approvals.ts';
import { latestEscalation } from '../journal/chain.ts';
import { chainOutcome } from '../ledger/outcome.ts';
import type { OutboxView } from '../outbox/view.ts';
import { displayNameOf, emailsOfPerson, livenessOf, type Services } from '../app/services.ts';

/**
 * The item page: the item, with the payment as Stripe has it (`payment`, null with
 * `payment_error` saying why when Stripe could not be read). Display only.
 */
export type ItemPage = ItemDetail & { payment: PaymentPanel | null; payment_error: string | null };

/** What the page says when the payment panel could not be read. */
export const PAYMENT_UNREAD = 'Stripe could not be read just now; the payment is not shown';
/** What the page says when item pages have read Stripe as often as they may (factsLimits.itemPageReadsPerSecond). */
export const PAGE_READS_SPENT = 'Item pages read Stripe a few times a second at most, and that is spent just now; open the item again in a moment';

/** Facts recorded when the request was first decided on. */

/**
 * Everything the item page shows, read from the journal, with the facts read from Stripe now.
 * `views` are the projections as `views.current()` gave them, caught up; `mayRead` says whether the reader may see a request routed to these groups (finance any, an approver their own).
 */
export async function itemDetail(
  services: Services,
  views: { inbox: InboxView; outbox: OutboxView },
  effectId: string,
  chain: Entry[],
  mayDecide: (group: string) => boolean,
  mayRead: (groups: ReadonlySet<string>) => boolean,
  reader: string | null = null,
): Promise<ItemPage> {
  const request = boundRequest(chain);
  // Only chains the inbox owns are shown, and each binds its request in its first PROPOSED.
  if (request === null) throw new Error(`item ${effectId} has no bound request`);
  // An open item is in memory; a chain finished for good is none.
  const summary = views.inbox.chains.get(effectId);
  const found = summary ? openItem(summary) : null;
  const item = found === null ? null : services.views.shown(found);
  // The panel is read beside the facts now, not after them.
  const paymentRead = services.paymentPanels
    .read({
      effectId,
      paymentIntent: String(request.payment_intent),
      version: chain.length,
      // Another request on the same payment is named only to whoever may open it, as in the ledger.
      requestIdOf: async (id) => {
        const other = await views.inbox.summary(id);
        return other !== null && mayRead(other.groups) ? (other.request?.id ?? null) : null;
      },
    })
    .then(
      (payment) => ({ payment, error: null }),
      (error: unknown) => ({ payment: null, error: error instanceof PageReadsSpentError ? PAGE_READS_SPENT : PAYMENT_UNREAD }),
    );
  const then = askedOnFacts(chain);
  let now: JsonObject | null = null;
  let nowError: string | null = null;
  // Display only, and paced with the panels: however fast pages are asked for, Stripe is not.
  if (!services.paymentPanels.takePageRead()) nowError = `${PAGE_READS_SPENT}; the facts below are the ones recorded`;
  else {
    try {
      now = await services.target.capture(String(request.payment_intent), effectId);
    } catch {
      nowError = 'Stripe could not be read just now; the facts below are the ones recorded';
    }
  }
  const { payment, error: paymentError } = await paymentRead;
  const mayDecideIt = item !== null && mayDecide(item.group);
  const approvals = approvalsShown(services, chain);
  const approvalBlock = mayDecideIt && reader !== null ? await approvalBlockFor(services, effectId, chain, reader) : null;
  const receipt = signReceipt(effectId, chain, services.signingKey);
  const report = await verifyReceipt(receipt, new Map([[services.signingKey.keyId, services.signingKey.publicKeyPem]]));
  return {
    effect_id: effectId,
    request,
    state: chainState(chain),
    outcome: chainOutcome(chain),
    item,
    facts_then: then,
    facts_now: now,
    facts_now_error: nowError,
    changes: now ? changesSinceAsked(chain, now) : [],
    history: chain,
    verification: report,
    receipt: `/api/items/${effectId}/receipt`,
    may_decide: mayDecideIt,
    notifications: await views.outbox.history.notificationsAbout(effectId),
    payment,
    payment_error: paymentError,
    approvals,
    approval_block: approvalBlock,
    history_approvals: historyApprovals(services, chain),
  };
}

/** Each approval of a multi-approver escalation in the history, with display names (none when one approver was always enough). */
function historyApprovals(services: Services, chain: readonly Entry[]): HistoryApproval[] {
  return approvalHistory(chain, livenessOf(services)).map((a) => ({ ...a, display_name: displayNameOf(services.config, a.by) }));
}

/** A two-approver item's approvals now, with display names; null when one approver is enough. */
function approvalsShown(services: Services, chain: readonly Entry[]): ApprovalsShown | null {
  const standing = approvalStanding(chain, livenessOf(services));
  if (standing === null) return null;
  const named = (a: { by: string; at_ms: number; voided: ApprovalShown['voided'] }): ApprovalShown => ({ ...a, display_name: displayNameOf(services.config, a.by) });
  return { required: standing.required, approvals: standing.approvals.map(named), voided: standing.voided.map(named) };
}

/** Why `reader` may not approve the open escalation (the same rules the approval itself meets), or null. */
async function approvalBlockFor(services: Services, effectId: string, chain: readonly Entry[], reader: string): Promise<ApprovalBlock | null> {
  const { escalation } = latestEscalation(chain);
  const request = boundRequest(chain);
  if (!escalation || !request) return null;
  const shown = services.currentFacts.get(effectId)?.customer ?? null;
  const beneficiary = { onBehalfOf: typeof request.on_behalf_of === 'string' ? request.on_behalf_of : null, customerEmail: shown?.email ?? null };
  const step = decideApproval(chain, escalation, { name: reader, emails: emailsOfPerson(services.config, reader) }, beneficiary);
  if (step.next !== 'refuse') return null;
  if (step.code === 'same_approver') return { code: 'same_approver', why: 'You approved it already; it needs a second approver, someone other than you.' };
  return {
    code: 'beneficiary',
    why:
      step.match === 'on_behalf_of'
        ? `It is made for your benefit: the request names you (on behalf of ${request.on_behalf_of}). Someone else must approve it.`
        : "It is made for your benefit: the payment's customer email is yours. Someone else must approve it.",
  };
}
