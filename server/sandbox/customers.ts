import { invalidRequest } from './errors.ts';
import type { FormObject } from './form.ts';
import { newId } from './ids.ts';
import { type Read, readString, rejectUnknown } from './params.ts';
import {
  CARD_BRANDS,
  type CardDetails,
  type CustomerDetails,
  type CustomerRecord,
  type DemoPaymentOptions,
  type PaymentMethodId,
  type PaymentMethodRecord,
  type StripeFailure,
} from './types.ts';

/** The card each test token stands for, as in Stripe test mode (`pm_card_createDispute` is 4000 0000 0000 0259). */
export const TEST_CARDS: Record<PaymentMethodId, CardDetails> = {
  pm_card_visa: { brand: 'visa', last4: '4242' },
  pm_card_mastercard: { brand: 'mastercard', last4: '4444' },
  pm_card_amex: { brand: 'amex', last4: '8431' },
  pm_card_createDispute: { brand: 'visa', last4: '0259' },
};

/** Who a demo payment is from when its caller names nobody: Stripe's own documentation customer. */
export const DEMO_CUSTOMER: CustomerDetails = { name: 'Jenny Rosen', email: 'jenny.rosen@example.com' };

/** Test cards expire this many years after they are first used: far enough that none expires in a run. */
const CARD_VALID_YEARS = 3;

/** Longest name and email a customer may have, as Stripe bounds them. */
const CUSTOMER_NAME_CHARS_MAX = 256;
const CUSTOMER_EMAIL_CHARS_MAX = 512;

const CUSTOMER_PARAMS = ['name', 'email', 'expand'] as const;

/** Check the parameters of `POST /v1/customers`. */
export function readCustomerRequest(params: FormObject): Read<CustomerDetails> {
  const unknown = rejectUnknown(params, CUSTOMER_PARAMS);
  if (unknown) return refuse(unknown);
  const name = readString(params, 'name');
  if (!name.ok) return name;
  const email = readString(params, 'email');
  if (!email.ok) return email;
  const details = { name: name.value, email: email.value };
  const bad = checkCustomer(details);
  return bad ? refuse(bad) : { ok: true, value: details };
}

/** A new customer. */
export function decideCustomer(details: CustomerDetails, nowMs: number): CustomerRecord {
  return { kind: 'customer', id: newId('cus'), name: details.name, email: details.email, createdMs: nowMs };
}

/** The card payment method confirming a payment with a test token makes: the token's card, or the one a demo names. */
export function decideCard(
  token: PaymentMethodId,
  card: CardDetails | null,
  customerId: string | null,
  nowMs: number,
): PaymentMethodRecord {
  const { brand, last4 } = card ?? TEST_CARDS[token];
  return {
    kind: 'payment_method',
    id: newId('pm'),
    brand,
    last4,
    expMonth: 12,
    expYear: new Date(nowMs).getUTCFullYear() + CARD_VALID_YEARS,
    customerId,
    createdMs: nowMs,
  };
}

/** Why a demo payment's options cannot be used, or null when they can. */
export function checkDemoOptions(options: DemoPaymentOptions, nowMs: number): StripeFailure | null {
  if (options.customer) {
    const bad = checkCustomer(options.customer);
    if (bad) return bad;
  }
  if (options.card !== undefined) {
    if (!CARD_BRANDS.includes(options.card.brand)) {
      return invalidRequest(null, `card.brand must be one of ${CARD_BRANDS.join(', ')}.`, 'card[brand]');
    }
    if (!/^\d{4}$/.test(options.card.last4)) return invalidRequest(null, 'card.last4 must be four digits.', 'card[last4]');
  }
  const chargedAtMs = options.chargedAtMs;
  if (chargedAtMs !== undefined && !(Number.isSafeInteger(chargedAtMs) && chargedAtMs >= 0 && chargedAtMs <= nowMs)) {
    return invalidRequest(null, 'chargedAtMs must be a whole number of ms since 1970, not in the future.', 'chargedAtMs');
  }
  return null;
}

function checkCustomer(details: CustomerDetails): StripeFailure | null {
  if (details.name !== null && details.name.length > CUSTOMER_NAME_CHARS_MAX) {
    return invalidRequest(null, `A customer's name is at most ${CUSTOMER_NAME_CHARS_MAX} characters.`, 'name');
  }
  if (details.email === null) return null;
  if (details.email.length > CUSTOMER_EMAIL_CHARS_MAX || !/^[^\s@]+@[^\s@]+$/.test(details.email)) {
    return invalidRequest('email_invalid', `Invalid email address: ${details.email}`, 'email');
  }
  return null;
}

function refuse<T>(failure: StripeFailure): Read<T> {
  return { ok: false, failure };
}
