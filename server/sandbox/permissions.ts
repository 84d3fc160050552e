import { maskKey } from './errors.ts';
import type { StripeOperation } from './operations.ts';
import type { StripeFailure } from './types.ts';

/**
 * The permissions of a restricted key (`rk_...`) the sandbox can take away, named as Stripe names
 * them in its refusals (`rak_refund_write`). A secret key (`sk_...`) holds them all.
 */
export const RESTRICTED_KEY_PERMISSIONS = [
  'rak_payment_intent_read',
  'rak_payment_intent_write',
  'rak_charge_read',
  'rak_refund_read',
  'rak_refund_write',
  'rak_dispute_read',
  'rak_customer_read',
  'rak_customer_write',
  'rak_payment_method_read',
] as const;
/** One permission of a restricted key. */
export type RestrictedKeyPermission = (typeof RESTRICTED_KEY_PERMISSIONS)[number];

/** The one permission each operation needs; a `Record`, so a new operation does not compile without its permission. */
const OPERATION_PERMISSIONS: Readonly<Record<StripeOperation, RestrictedKeyPermission>> = {
  'GET /v1/payment_intents': 'rak_payment_intent_read',
  'GET /v1/payment_intents/:id': 'rak_payment_intent_read',
  'GET /v1/charges': 'rak_charge_read',
  'GET /v1/charges/:id': 'rak_charge_read',
  'GET /v1/charges/:id/refunds': 'rak_refund_read',
  'GET /v1/refunds': 'rak_refund_read',
  'GET /v1/refunds/:id': 'rak_refund_read',
  'GET /v1/disputes': 'rak_dispute_read',
  'GET /v1/disputes/:id': 'rak_dispute_read',
  'GET /v1/customers': 'rak_customer_read',
  'GET /v1/customers/:id': 'rak_customer_read',
  'GET /v1/payment_methods/:id': 'rak_payment_method_read',
  'POST /v1/refunds': 'rak_refund_write',
  'POST /v1/payment_intents': 'rak_payment_intent_write',
  'POST /v1/payment_intents/:id/confirm': 'rak_payment_intent_write',
  'POST /v1/customers': 'rak_customer_write',
};

/** The account the sandbox's refusals name, as Stripe names the account a key belongs to. */
export const SANDBOX_ACCOUNT_ID = 'acct_interlock_sandbox';

/**
 * A restricted key lacking the permission an operation needs is refused before the endpoint runs,
 * as Stripe refuses it: `403`, type `invalid_request_error`, no code, the key masked and the
 * missing permission named (the SDK raises it as a `StripePermissionError`). Null when it may go on.
 */
export function permissionRefusal(key: string, operation: StripeOperation, denied: readonly RestrictedKeyPermission[]): StripeFailure | null {
  if (!key.startsWith('rk_')) return null;
  const needed = OPERATION_PERMISSIONS[operation];
  if (!denied.includes(needed)) return null;
  return {
    statusCode: 403,
    error: {
      type: 'invalid_request_error',
      message: `The provided key '${maskKey(key)}' does not have the required permissions for this endpoint on account '${SANDBOX_ACCOUNT_ID}'. Having the '${needed}' permission would allow this request to continue.`,
    },
  };
}
