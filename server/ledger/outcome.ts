import type { Decision, Entry } from '../../shared/entries.ts';
import type { LedgerOutcome } from '../../shared/ledger.ts';
import { closingDecision, has, isOpenDispatch } from '../journal/chain.ts';
import { finalStatus } from '../journal/confirmations.ts';
import { refusedMissingPayment } from '../inbox/state.ts';

/** What decides how a request ended, folded from its journal chain. */
export interface OutcomeFacts {
  /** A DISPATCHED not yet closed: the send is under way. */
  sending: boolean;
  /** A COMMITTED was written: the refund landed at Stripe. */
  committed: boolean;
  /** The confirmation that stands says `failed` or `canceled`: no money went back. */
  failedAtStripe: boolean;
  /** An AMBIGUOUS was written: nobody can know whether the send reached Stripe. */
  ambiguous: boolean;
  /** The person's decision that closed it (`reject`, or `repair`), null when none did. */
  closing: Decision | null;
  /** A refusal no person is asked about and nothing follows (Stripe knows no such payment). */
  refusedForGood: boolean;
}

/**
 * How a request ended, most specific first, as `statusOf` orders the agent's statuses: a send
 * under way is open whatever came before it, a refund that landed is money whatever a person
 * decided about an earlier escalation, and a person's closing decision outranks the ambiguity it
 * closed.
 */
export function outcomeOf(facts: OutcomeFacts): LedgerOutcome {
  if (facts.sending) return 'open';
  if (facts.committed) return facts.failedAtStripe ? 'failed_at_stripe' : 'refunded';
  if (facts.closing === 'repair') return 'repaired';
  if (facts.closing === 'reject') return facts.ambiguous ? 'closed' : 'rejected';
  if (facts.ambiguous) return 'ambiguous';
  if (facts.refusedForGood) return 'refused';
  return 'open';
}

/** Where Stripe's standing confirmation says no money went back. */
export function isFailedAtStripe(standing: string | null): boolean {
  return standing === 'failed' || standing === 'canceled';
}

/** How a request ended, from its whole chain (the item page's); the same as the ledger's fold of it. */
export function chainOutcome(chain: readonly Entry[]): LedgerOutcome {
  const confirmations = chain.flatMap((entry) => (entry.kind === 'CONFIRMED' ? [entry.status] : []));
  return outcomeOf({
    sending: isOpenDispatch(chain),
    committed: has(chain, 'COMMITTED'),
    failedAtStripe: isFailedAtStripe(finalStatus(confirmations)),
    ambiguous: has(chain, 'AMBIGUOUS'),
    closing: closingDecision(chain)?.decision ?? null,
    refusedForGood: refusedMissingPayment(chain),
  });
}
