/** Every bound of the display caches (current facts, payment panels), each with why it is what it is. */
export const factsLimits = {
  /**
   * Stripe reads per second the current facts cache spends, all causes together (arrivals,
   * webhooks, the background): a small share of test mode's 25 per second, so sends, rechecks
   * and confirmation lookups always have room.
   */
  readsPerSecondMax: 2,
  /**
   * What one capture costs in Stripe reads: the payment intent, a page of its refunds and its
   * charge. Captures are paced as that many reads, so they start at least 1.5 s apart.
   */
  readsPerCapture: 3,
  /**
   * Captures a payment event's read may start ahead of the pace: one, so a webhook about an open
   * item is read at once even when the pace just let a read go (its stale chip within a second),
   * while over any few seconds the reads still average 2 per second. A second event at once
   * waits for the pace.
   */
  eventCapturesAheadMax: 1,
  /** The background reads one open item again at most this often; arrivals and webhooks read it at once. */
  itemRefreshMsMin: 600_000,
  /** A payment panel read stays good this long: opening an item twice in a minute reads Stripe once. */
  panelTtlMs: 60_000,
  /** Payment panels kept at once (a few KB each); the least recently read is forgotten first. */
  panelsKeptMax: 500,
  /**
   * Stripe reads item pages may start, all readers together (a read is the facts now or a panel,
   * 3 calls each): 20 at once (ten items opened in a burst), then 3 a second (an item opened every
   * second or so, a reopen within a minute costing one): at most 69 calls in any second and 9 a
   * second after that, however fast anyone asks (finance reads every item there is). Past it a
   * page shows what the journal says, and says why.
   */
  itemPageReadsBurst: 20,
  itemPageReadsPerSecond: 3,
} as const;

/** The least time between the starts of two captures: 1,500 ms at 2 reads per second and 3 reads per capture. */
export const CAPTURE_SPACING_MS = (1000 * factsLimits.readsPerCapture) / factsLimits.readsPerSecondMax;

/** How far ahead of the pace a payment event's read may start: one capture's spacing, 1,500 ms. */
export const EVENT_HEADROOM_MS = CAPTURE_SPACING_MS * factsLimits.eventCapturesAheadMax;
