import type { MoneyFigures, Scoreboard } from '../../shared/api.ts';
import { UNKNOWN_CURRENCY } from '../../shared/money.ts';
import { formatMoney } from './format.ts';

/** A scoreboard figure that is one number (the nested ones are drawn as charts). */
export type CountFigure = { [K in keyof Scoreboard]: Scoreboard[K] extends number ? K : never }[keyof Scoreboard];

/**
 * What each figure is called and how it is counted, in finance's words (inbox spec §17.2). A
 * `Record` over the board's keys: a figure added on the server does not compile here until it
 * has a name and a definition.
 */
export const FIGURES: Record<keyof Scoreboard, { label: string; help: string }> = {
  requests: {
    label: 'Requests',
    help: 'Refunds agents asked for. When a person accepts a repair, the new request it makes is not counted again.',
  },
  cleared_no_person: {
    label: 'Cleared with no person',
    help: 'Requests sent to Stripe on policy alone: every rule passed, nobody was asked, and every send was authorized by policy.',
  },
  no_person_share: {
    label: 'Share cleared with no person',
    help: 'Cleared with no person divided by requests, to a tenth of a percent; 0 when there are no requests.',
  },
  cleared_verified: {
    label: 'Receipts that verify',
    help: 'Of the requests cleared with no person, those whose receipt verifies: an unbroken hash chain, an authorization before the first send, at most one commit, and every send’s checks passed.',
  },
  sent_after_person: {
    label: 'Sent after a person',
    help: 'Refunds sent whose last send was authorized by a person rather than by policy. The new request of an accepted repair counts too.',
  },
  escalated: {
    label: 'Escalated',
    help: 'Requests put in front of a person at least once, the new requests of accepted repairs included.',
  },
  rejected: {
    label: 'Rejected',
    help: 'Decisions to reject. A rejected refund is never sent.',
  },
  closed_by_repair: {
    label: 'Closed by a repair',
    help: 'Decisions that closed a request by accepting a repair: a new request replaces it, and the original is never sent.',
  },
  repairs_accepted: {
    label: 'Repairs accepted',
    help: 'Decisions that accepted a repair: a new request replaced the one asked, as the ledger’s requests closed by a repair count them.',
  },
  approved_on_facts_now: {
    label: 'Approvals on the facts now',
    help: 'Approvals of the refund as asked after the payment changed under it (a refund outside Interlock that still left room for it): approvals on the facts now, not repairs.',
  },
  open: {
    label: 'Still open',
    help: 'Requests whose latest escalation has no decision yet: they wait for a person now.',
  },
  escalated_by_reason: {
    label: 'Escalations by reason',
    help: 'Each trip to a person, counted once by the reason it first went. An SLA move or an item shown again is the same trip.',
  },
  stale_approvals_caught: {
    label: 'Stale approvals caught',
    help: 'Trips back to a person because an approval went stale before sending (a fact changed, the approval expired, or the approver left the group) on a request a person had approved.',
  },
  crash_to_person: {
    label: 'Crashes sent to a person',
    help: 'Trips to a person that began with a crash: whether the refund was sent could not be known, or a fact or the authority changed while the sender was down. A Stripe error is not a crash.',
  },
  repairs_suggested: {
    label: 'Repairs suggested',
    help: 'Trips to a person that came with a suggested repair.',
  },
  sla_breaches: {
    label: 'SLA breaches',
    help: 'Every time an item outlived its SLA: each move to the next group of its chain, and the mark when the last group keeps it.',
  },
  sla_breaches_by_group: {
    label: 'SLA breaches by group',
    help: 'The same breaches, by the group the item was moved to, or the last group of its chain that kept it.',
  },
  sla_breaches_missed_by_group: {
    label: 'SLA breaches by the group that missed them',
    help: 'The same breaches, by the group the item was with when its deadline passed: the group it was moved away from, or the last group of its chain that kept it.',
  },
  money: {
    label: 'Money, by currency',
    help: 'The money figures below, one currency at a time: amounts in different currencies are never added together.',
  },
  confirmed_by_target: {
    label: 'Confirmed by Stripe',
    help: 'Requests whose confirmations from Stripe (its webhook events, or a lookup) settle as succeeded.',
  },
  unconfirmed_sent: {
    label: 'Sent, not yet confirmed',
    help: 'Refunds sent to Stripe that Stripe has not confirmed as succeeded: still pending, failed, or no event yet.',
  },
  time_to_decision: {
    label: 'Time to decision',
    help: 'From when an item first reached a person to their decision, for each trip; an SLA move does not restart the clock. The new request of a repair, approved at once by the person who accepted the repair, is left out: nobody waited. Median: half were decided faster. p90: nine in ten were.',
  },
};

/** The order of the single-number figures in the full list, headline figures first. */
export const COUNT_ORDER: readonly CountFigure[] = [
  'requests',
  'cleared_no_person',
  'no_person_share',
  'cleared_verified',
  'sent_after_person',
  'escalated',
  'rejected',
  'open',
  'sla_breaches',
  'confirmed_by_target',
  'unconfirmed_sent',
  'closed_by_repair',
  'repairs_accepted',
  'approved_on_facts_now',
  'repairs_suggested',
  'stale_approvals_caught',
  'crash_to_person',
];

const counts = new Intl.NumberFormat('en-US');

/** A count for people: `1,204`. */
export function formatCount(value: number): string {
  return counts.format(value);
}

/** A share (0 to 1, three places) as a percentage with one decimal: `0.143` → `14.3%`. */
export function formatShare(share: number): string {
  return `${(share * 100).toFixed(1)}%`;
}

/** A wait in minutes or hours (days past two): `40 min`, `3.5 h`, `< 1 min`; a dash when there is none. */
export function formatWait(ms: number | null): string {
  if (ms === null) return '—';
  const minutes = ms / 60_000;
  if (minutes < 1) return '< 1 min';
  if (minutes < 90) return `${Math.round(minutes)} min`;
  const hours = minutes / 60;
  const trim = (value: number) => value.toFixed(1).replace(/\.0$/, '');
  return hours < 48 ? `${trim(hours)} h` : `${trim(hours / 24)} days`;
}

/** What each money figure is called and how it is counted, in finance's words. */
export const MONEY_FIGURES: Record<keyof MoneyFigures, { label: string; help: string }> = {
  refunded_minor: { label: 'Refunded', help: 'Sent to Stripe and not reported failed since: with no person plus after a person.' },
  refunded_no_person_minor: { label: 'Refunded with no person', help: 'Sent on policy alone: the requests cleared with no person.' },
  refunded_after_person_minor: {
    label: 'Refunded after a person',
    help: 'Sent once a person approved it, or on the new request of a repair a person accepted.',
  },
  repaired_minor: {
    label: 'Repairs sent instead',
    help: 'Sent on the new requests of accepted repairs: what was left to refund. An approval on the facts now is no repair: it counts as refunded after a person.',
  },
  rejected_minor: { label: 'Rejected', help: 'Asked for by requests a person rejected or closed: never sent.' },
  refused_stale_minor: {
    label: 'Refused as stale',
    help: 'Asked for by requests refused because a fact changed before the send (a refund by hand, a dispute), and not sent since.',
  },
  exposure_minor: { label: 'Open exposure', help: 'Waiting for a person, waiting its turn to reach Stripe, plus approved and not sent yet.' },
  exposure_queued_minor: { label: 'Waiting for a person', help: 'Asked for by requests in an inbox now.' },
  exposure_waiting_stripe_minor: {
    label: 'Waiting for Stripe',
    help: 'Asked for by requests waiting their turn to reach Stripe within its rate limits: no person has them, and nothing was sent yet.',
  },
  exposure_approved_minor: { label: 'Approved, not sent yet', help: 'Approved (by a person or by policy) and not sent yet, or being sent now.' },
  failed_at_stripe_minor: {
    label: 'Failed at Stripe',
    help: 'Sent, then reported failed (or canceled) by Stripe: no money went back, so none of it is counted as refunded.',
  },
};

/** The order of the money figures in the table. */
export const MONEY_ORDER: readonly (keyof MoneyFigures)[] = [
  'refunded_minor',
  'refunded_no_person_minor',
  'refunded_after_person_minor',
  'repaired_minor',
  'refused_stale_minor',
  'rejected_minor',
  'exposure_minor',
  'exposure_queued_minor',
  'exposure_waiting_stripe_minor',
  'exposure_approved_minor',
  'failed_at_stripe_minor',
];


/** An amount of one currency as finance reads it: `$80.00`, `¥5,000`; never guessed for an unknown currency. */
export function formatMinor(minorUnits: number, currency: string): string {
  if (currency === UNKNOWN_CURRENCY) return `${(minorUnits / 100).toFixed(2)} (currency not recorded)`;
  return formatMoney(minorUnits, currency);
}

/** A currency's name in a heading: `USD`, or words for money whose currency was not recorded. */
export function currencyName(currency: string): string {
  return currency === UNKNOWN_CURRENCY ? 'Currency not recorded' : currency.toUpperCase();
}
