/** Every bound of the sandbox in one place, each with why it is what it is. */
export const sandboxLimits = {
  /** Stripe refuses idempotency keys longer than this. */
  idempotencyKeyCharsMax: 255,
  /** Stripe may prune a key once it is 24 hours old; the sandbox forgets it exactly then. */
  idempotencyKeyTtlMs: 86_400_000,
  /** Saved keys at once: far above any test or bench, low enough that a runaway client is refused. */
  idempotencyKeysMax: 1_000_000,
  /** A Stripe API request body; real refund and payment intent requests are well under 2 KiB. */
  requestBodyBytesMax: 64 * 1024,
  /** Nesting of form keys (`a[b][c]`) and pairs in one body or query: Stripe's shapes need 3 and a few dozen. */
  formDepthMax: 5,
  formPairsMax: 1000,
  /** Stripe allows 50 metadata keys, keys of 40 characters and values of 500. */
  metadataKeysMax: 50,
  metadataKeyCharsMax: 40,
  metadataValueCharsMax: 500,
  /** Stripe lists return at most 100 objects per page, 10 when no limit is given. */
  listLimitMax: 100,
  listLimitDefault: 10,
  /** Stripe's ceiling for one amount in the smallest currency unit. */
  amountCentsMax: 99_999_999,
  /** A fault's repeat count and a delay fault's wait, so a typo cannot wedge a test run. */
  faultTimesMax: 1000,
  faultDelayMsMax: 120_000,
  /** Faults queued at once. */
  faultsMax: 100,
  /** How far one clock advance may move: ten years is more than any key window or SLA. */
  clockAdvanceMsMax: 10 * 365 * 86_400_000,
  /** Delivery attempts per webhook event (the first included); test mode also gives up after a few. */
  webhookAttemptsMax: 4,
  /** Backoff before the second attempt; it doubles for each later one (100, 200, 400 ms). */
  webhookBackoffMsBase: 100,
  /** A webhook endpoint that has not answered by then counts as failed and is retried. */
  webhookTimeoutMs: 5_000,
  /** Events waiting for delivery; beyond this the oldest waiting event is dropped and logged. */
  webhookQueueMax: 10_000,
  /** Delivery attempts remembered for `deliveries()`; the oldest are forgotten first. */
  deliveriesKeptMax: 1_000,
  /** A test switch's webhook delay. */
  webhookDelayMsMax: 60_000,
  /** Stripe expands at most four levels of a property (`latest_charge.refunds.data.charge`). */
  expandDepthMax: 4,
  /** An expanded list (a charge's `refunds`) holds its first 10 items, as Stripe's do; `has_more` says there are more. */
  expandedListItemsMax: 10,
  /** The window Stripe's rate limits count in: operations a second, on the sandbox clock. */
  rateLimitWindowMs: 1_000,
  /** Stripe's global limit per account in test mode and sandboxes (its rate-limits page). */
  testOperationsPerSecond: 25,
  /** Stripe's global limit per account in live mode. */
  liveOperationsPerSecond: 100,
  /** Stripe's default limit for each endpoint (named operation), in either mode, counted against the global one too. */
  endpointRequestsPerSecond: 25,
  /** Request arrivals `requestCounts()` keeps, the oldest forgotten first: minutes at Stripe's live pace. */
  requestArrivalsKeptMax: 20_000,
} as const;
