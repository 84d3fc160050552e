import type { Decision } from '../../shared/entries.ts';
import type { LedgerOutcome } from '../../shared/ledger.ts';

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
