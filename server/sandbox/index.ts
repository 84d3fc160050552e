/**
 * A local Stripe sandbox: an HTTP server speaking the part of Stripe's API the refunds target
 * uses (payment intents, charges, refunds with idempotency keys, disputes) and sending signed
 * webhooks, so the real `stripe` SDK runs against it. It is the embedded default for
 * `npm start` and the ground truth for tests; `main.ts` runs it as its own process.
 */
export { CONTROL_ROUTES } from './control.ts';
export { EXPAND_MODES, type ExpandMode } from './expand.ts';
export { REQUEST_OUTCOMES, type OutcomeCounts, type RequestCounts, type RequestOutcome } from './counts.ts';
export { type OperationName, STRIPE_OPERATIONS, type StripeOperation } from './operations.ts';
export { RATE_LIMIT_MODES, type RateLimitMode } from './rate-limits.ts';
export { DEFAULT_SETTINGS, type SandboxSettings, SETTLE_MODES, type SettleMode } from './settings.ts';
export { SandboxError } from './errors.ts';
export { sandboxLimits } from './limits.ts';
export { connectSandbox, type RemoteSandbox } from './remote.ts';
export { SANDBOX_API_KEY, type Sandbox, type SandboxOptions, sandboxStripe, startSandbox } from './sandbox.ts';
export { DEMO_CUSTOMER, TEST_CARDS } from './customers.ts';
export {
  CARD_BRANDS,
  type CardBrand,
  type CardDetails,
  CHARGE_EVENT_TYPES,
  type Charge,
  type ChargeEventType,
  type Customer,
  DEFAULT_WEBHOOK_EVENTS,
  type CustomerDetails,
  type DemoPaymentOptions,
  type Delivery,
  type Dispute,
  DISPUTE_EVENT_TYPES,
  DISPUTE_MOVES,
  DISPUTE_STATUSES,
  type DisputeEventType,
  type DisputeMove,
  type DisputeStatus,
  EVENT_TYPES,
  type EventType,
  FAULT_ACTIONS,
  FAULT_TARGETS,
  type Fault,
  type FaultAction,
  type FaultTarget,
  PAYMENT_METHODS,
  type PaymentIntent,
  type PaymentMethod,
  type PaymentMethodId,
  type Refund,
  REFUND_EVENT_TYPES,
  REFUND_STATUSES,
  type RefundEventType,
  type RefundStatus,
  SETTLE_OUTCOMES,
  type SettleOutcome,
  type StripeEvent,
  type WebhookConfig,
  type WebhookMode,
} from './types.ts';
export { signatureHeader } from './webhooks.ts';
