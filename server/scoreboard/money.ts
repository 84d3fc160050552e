import type { ChainState, MoneyFigures } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { isJsonObject } from '../../shared/json.ts';
import { UNKNOWN_CURRENCY } from '../../shared/money.ts';
import { effectAmountOf } from '../refunds/effect.ts';

export type { MoneyFigures } from '../../shared/api.ts';

/** Every money figure, in the order the API, the CSV and the page give them. */
export const MONEY_FIELDS = [
  'refunded_minor',
  'refunded_no_person_minor',
  'refunded_after_person_minor',
  'repaired_minor',
  'rejected_minor',
  'refused_stale_minor',
  'exposure_minor',
  'exposure_queued_minor',
  'exposure_waiting_stripe_minor',
  'exposure_approved_minor',
  'failed_at_stripe_minor',
] as const satisfies readonly (keyof MoneyFigures)[];


/** Refusals that say a fact the decision relied on changed before the send. */
export const STALE_CODES: ReadonlySet<string> = new Set(['stale_premise', 'stale_premise_at_recovery']);

/** States in which a request waits for a person (or to be put in front of one). */
const QUEUED_STATES: ReadonlySet<ChainState> = new Set(['NEW', 'ESCALATED', 'NEEDS_ESCALATION']);
/** States in which a request may be sent without anyone deciding again. */
const APPROVED_STATES: ReadonlySet<ChainState> = new Set(['APPROVED', 'SENDING']);

/** All zero. */
export function emptyMoney(): MoneyFigures {
  return {
    refunded_minor: 0,
    refunded_no_person_minor: 0,
    refunded_after_person_minor: 0,
    repaired_minor: 0,
    rejected_minor: 0,
    refused_stale_minor: 0,
    exposure_minor: 0,
    exposure_queued_minor: 0,
    exposure_waiting_stripe_minor: 0,
    exposure_approved_minor: 0,
    failed_at_stripe_minor: 0,
  };
}

/** The currency of a chain, from the facts its first entry recorded (lowercase), or `unknown`. */
export function currencyOf(first: Entry): string {
  return currencyOfFacts(first.kind === 'PROPOSED' ? first.premises : null);
}

/**
 * The currency a chain's later entry names, for a chain bound with no facts (a request that waited
 * its turn for Stripe): the facts its escalation showed a person, or the premises of its send.
 */
export function laterCurrencyOf(entry: Entry): string {
  if (entry.kind === 'ESCALATED') return currencyOfFacts(entry.facts);
  if (entry.kind === 'DISPATCHED') return currencyOfFacts(entry.premises);
  return UNKNOWN_CURRENCY;
}

function currencyOfFacts(facts: unknown): string {
  const currency = isJsonObject(facts) ? facts.currency : undefined;
  return typeof currency === 'string' && /^[A-Za-z]{3}$/.test(currency) ? currency.toLowerCase() : UNKNOWN_CURRENCY;
}

/** The amount a chain's bound payload asks for, in the currency's smallest unit (0 when it names none). */
export function amountOf(first: Entry): number {
  const amount = first.kind === 'PROPOSED' ? effectAmountOf(first.effect) : null;
  return amount !== null && Number.isSafeInteger(amount) && amount > 0 ? amount : 0;
}

/** What one chain adds to its currency's money figures. */
export interface ChainMoneyFacts {
  amountMinor: number;
  state: ChainState;
  committed: boolean;
  cleared: boolean;
  /** A repair's new request (an approval on the facts now is no repair). */
  repaired: boolean;
  rejected: boolean;
  refusedStale: boolean;
  /** Sent, then reported failed (or canceled) by Stripe: the money did not go back. */
  failedAtStripe: boolean;
  /** Refused for good with no person to ask (Stripe knows no such payment): nothing is owed or open. */
  refusedForGood: boolean;
  /** Waiting its turn to reach Stripe (bound with no facts yet, nothing else done): no person has it. */
  waitingTurn: boolean;
}

/** One chain's money, each figure at the amount it asked for, once. */
export function chainMoney(facts: ChainMoneyFacts): MoneyFigures {
  const amount = facts.amountMinor;
  // A request waiting its turn for Stripe's budget is NEW too, but no person has it: it is counted apart.
  const waitingStripe = facts.waitingTurn ? amount : 0;
  const queued = !facts.refusedForGood && !facts.waitingTurn && QUEUED_STATES.has(facts.state) ? amount : 0;
  const approved = !facts.refusedForGood && APPROVED_STATES.has(facts.state) ? amount : 0;
  // Refunded: sent, and Stripe has not reported the refund failed since.
  const refunded = facts.committed && !facts.failedAtStripe;
  return {
    refunded_minor: refunded ? amount : 0,
    refunded_no_person_minor: refunded && facts.cleared ? amount : 0,
    refunded_after_person_minor: refunded && !facts.cleared ? amount : 0,
    repaired_minor: refunded && facts.repaired ? amount : 0,
    rejected_minor: facts.rejected ? amount : 0,
    refused_stale_minor: facts.refusedStale && !facts.committed ? amount : 0,
    exposure_minor: queued + waitingStripe + approved,
    exposure_queued_minor: queued,
    exposure_waiting_stripe_minor: waitingStripe,
    exposure_approved_minor: approved,
    failed_at_stripe_minor: facts.committed && facts.failedAtStripe ? amount : 0,
  };
}

/**
 * Add (sign 1) or take away (sign -1) one chain's money under its currency. A currency whose
 * figures all come back to zero is removed, so a board kept up to date and one summed from
 * scratch name the same currencies.
 */
export function addMoney(byCurrency: Record<string, MoneyFigures>, currency: string, money: MoneyFigures, sign: 1 | -1 = 1): void {
  const target = byCurrency[currency] ?? emptyMoney();
  for (const field of MONEY_FIELDS) target[field] += sign * money[field];
  if (MONEY_FIELDS.every((field) => target[field] === 0)) delete byCurrency[currency];
  else byCurrency[currency] = target;
}

/** A deep copy in currency order, so a board handed out never shares the running totals and always reads the same. */
export function copyMoney(byCurrency: Readonly<Record<string, MoneyFigures>>): Record<string, MoneyFigures> {
  const currencies = Object.keys(byCurrency).sort();
  return Object.fromEntries(currencies.map((currency) => [currency, { ...byCurrency[currency]! }]));
}
