import type Stripe from 'stripe';
import type { CustomerRecord, PaymentMethodRecord } from './types.ts';

// Customers and card payment methods in Stripe's shapes, typed by the SDK's own types; a
// payment intent or charge names them by id unless a read expands them.

/** Unix seconds, as every Stripe `created` field. */
function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/** A customer in Stripe's shape. */
export function renderCustomer(customer: CustomerRecord): Stripe.Customer {
  return {
    id: customer.id,
    object: 'customer',
    address: null,
    balance: 0,
    created: unixSeconds(customer.createdMs),
    currency: null,
    default_source: null,
    delinquent: false,
    description: null,
    discount: null,
    email: customer.email,
    invoice_prefix: customer.id.slice(4, 12).toUpperCase(),
    invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
    livemode: false,
    metadata: {},
    name: customer.name,
    next_invoice_sequence: 1,
    phone: null,
    preferred_locales: [],
    shipping: null,
    tax_exempt: 'none',
    test_clock: null,
  } satisfies Stripe.Customer;
}

/** A card payment method in Stripe's shape. */
export function renderPaymentMethod(method: PaymentMethodRecord, customer: CustomerRecord | undefined): Stripe.PaymentMethod {
  return {
    id: method.id,
    object: 'payment_method',
    allow_redisplay: 'unspecified',
    billing_details: billingDetails(customer),
    card: {
      brand: method.brand,
      checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' },
      country: 'US',
      display_brand: method.brand,
      exp_month: method.expMonth,
      exp_year: method.expYear,
      fingerprint: null,
      funding: 'credit',
      generated_from: null,
      last4: method.last4,
      networks: { available: [method.brand], preferred: null },
      regulated_status: 'unregulated',
      three_d_secure_usage: { supported: true },
      wallet: null,
    },
    created: unixSeconds(method.createdMs),
    customer: method.customerId,
    customer_account: null,
    livemode: false,
    metadata: {},
    type: 'card',
  } satisfies Stripe.PaymentMethod;
}

/** What a charge says of the card it was paid with. */
export function chargeCardDetails(method: PaymentMethodRecord, amountCents: number): Stripe.Charge.PaymentMethodDetails {
  return {
    type: 'card',
    card: {
      amount_authorized: amountCents,
      authorization_code: null,
      brand: method.brand,
      checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' },
      country: 'US',
      electronic_commerce_indicator: null,
      exp_month: method.expMonth,
      exp_year: method.expYear,
      funding: 'credit',
      installments: null,
      last4: method.last4,
      mandate: null,
      network: method.brand,
      network_transaction_id: null,
      regulated_status: 'unregulated',
      three_d_secure: null,
      transaction_link_id: null,
      wallet: null,
    },
  } satisfies Stripe.Charge.PaymentMethodDetails;
}

/** The billing details a payment carries: the customer's name and email, when there is one. */
export function billingDetails(customer: CustomerRecord | undefined): Stripe.PaymentMethod.BillingDetails {
  return {
    address: null,
    email: customer?.email ?? null,
    name: customer?.name ?? null,
    phone: null,
    tax_id: null,
  };
}
