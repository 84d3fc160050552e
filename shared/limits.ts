/** Every bound in one place, each with why it is what it is. */
export const limits = {
  /** Effect ids keep 48 bits of SHA-256: short enough to read, and a collision only refuses. */
  effectIdHexChars: 12,
  /**
   * Message ids (the outbox's chains) are `m` and 23 hex characters (92 bits of SHA-256): a shape
   * no effect id can have, so a message can never land on a refund's chain, nor a refund on a
   * message's, whatever ids an agent picks.
   */
  messageIdHexChars: 23,
  /** Stripe accepts at most 99,999,999 in the smallest unit for one charge. */
  refundCentsMax: 99_999_999,
  /** An agent's request id: 1 to 200 characters of a safe alphabet. */
  requestIdCharsMax: 200,
  /**
   * An `x-request-id` header taken as the HTTP request's id: 1 to 128 characters of letters,
   * digits and `._:-` (a UUID, a ULID, a W3C trace id, a proxy's id all fit); anything else is
   * replaced, so a log line or the journal never carries what a client wrote unchecked.
   */
  httpRequestIdCharsMax: 128,
  /**
   * The router's bound on one path parameter, decoded. It is the request line Node reads at all
   * (its 16 KiB header limit), not an id's length: every id reaches its route's schema, which
   * knows how long that id may be (a request id 200 characters, an effect id 12) and answers as
   * the OpenAPI document says. No route matches a path parameter with a regular expression, the
   * one thing a tighter router bound would protect.
   */
  pathParamCharsMax: 16 * 1024,
  /** A Stripe payment intent id: `pi_` and at most 100 more characters. */
  paymentIntentCharsMax: 103,
  /** A refund reason shown to approvers. */
  reasonCharsMax: 1000,
  /** The link to the ticket or conversation behind a request. */
  contextUrlCharsMax: 2000,
  /** `on_behalf_of`: a person's name or email address; SMTP carries no longer address (RFC 5321's path limit less its brackets). */
  onBehalfOfCharsMax: 254,
  /** Why a person rejected a request: told to the agent, so a sentence or two. */
  rejectReasonCharsMax: 500,
  /** Flags on one request, and the length of each. */
  flagsMax: 20,
  flagCharsMax: 64,
  /** How long a sender or recoverer owns an effect; a send must finish well inside it. */
  claimTtlMs: 120_000,
  /** Stripe forgets idempotency keys after 24 h; we stop trusting them 10 minutes earlier for clock skew. */
  stripeKeyWindowMs: 86_400_000,
  dedupMarginMs: 600_000,
  /** The Stripe SDK gives up on a request after this long, well inside the claim TTL. */
  stripeTimeoutMs: 30_000,
  /**
   * The facts a rule ran on stand in for the read before the send when they were read at most this
   * long before the DISPATCHED is written, under a guard on the journal position read before them
   * (a dispatch on the payment since then means a new read). Stripe itself refuses a refund beyond
   * what is left, so what this can miss is a refund or a dispute made outside Interlock in those
   * two seconds: the same window a read just before the send leaves open, a little wider.
   */
  factsReuseMs: 2_000,
  /**
   * A send Stripe answers 429 (nothing done, nothing kept under the key) is tried again under the
   * same key, refreshing its claim before each try, for this long; then the sender lets go of the
   * claim and recovery checks the authority and the facts again before it resends.
   */
  stripeBusyRetryMs: 60_000,
  /**
   * A target with no idempotency key and no lookup (tier 3) could not be resent by recovery, which
   * would have to call a dispatch it finds open ambiguous, though a busy answer means nothing was
   * done: a send it answers busy is tried again this long instead (half an hour of 429s is an
   * outage), claim refreshed, before the sender lets go.
   */
  busyRetryWithoutResendMs: 1_800_000,
  stripeBusyBackoffFirstMs: 250,
  stripeBusyBackoffMaxMs: 8_000,
  /**
   * A new request waits this long for its Stripe calls to be granted before it is journaled as
   * waiting its turn and answered 202: long enough for a quiet moment's answer to be final, short
   * enough that an agent always hears at once.
   */
  stripeTurnWaitMs: 50,
  /** Requests waiting their turn for Stripe: at most what the budget sends in this long; beyond it 429. */
  stripeTurnQueueMs: 600_000,
  /** An agent hears within this long; a send still going on then (retrying a 429) is answered IN_FLIGHT and finishes on its own. */
  refundAnswerWithinMs: 10_000,
  /** Stripe lists at most 100 objects per page. */
  stripeListLimit: 100,
  /** Refunds a restore reads from Stripe since its backup point: far beyond a day of this server's refunds; more is refused, not cut short. */
  restoreRefundsListedMax: 100_000,
  /** A person's name at login is short, and scrypt is never asked to hash an unbounded password. */
  loginNameCharsMax: 64,
  loginPasswordCharsMax: 1024,
  /**
   * Failed logins for one name from one address wait 1 s after the first, doubling with each
   * failure after it, up to 15 minutes: a person who mistypes waits a second and nobody else does,
   * while one address guessing one name gets about a hundred guesses a day.
   */
  loginDelayFirstMs: 1_000,
  loginDelayMaxMs: 900_000,
  /** A name and address with no failure for a day start again from nothing. */
  loginFailuresForgetMs: 86_400_000,
  /** The window the config's failures per name (`throttle.login_failures_per_name_per_hour`) drain over. */
  loginNameWindowMs: 3_600_000,
  /**
   * A device cookie, set at a successful login, keeps its browser past the per-name ceiling for
   * this long after that login: about the gap between two logins of someone back from a long leave.
   */
  deviceCookieMaxAgeMs: 90 * 86_400_000,
  /**
   * Entries each throttle keeps (failed logins by name and address, by name; agents' requests by
   * token and by address): about 100 bytes each, so 10 MB at most. Beyond it the entry used least
   * recently is forgotten; pushing one out by filling the store takes this many failed logins
   * (each an scrypt the attacker waits for) or addresses of their own, while the entry under attack
   * is used at every try.
   */
  throttleEntriesMax: 100_000,
  /** What an approver searches the done and closed lists for: a request id or a payment intent. */
  searchCharsMax: 200,
  /** Request bodies from agents and approvers. */
  bodyBytesMax: 16 * 1024,
  /** Webhook bodies from Stripe. */
  webhookBodyBytesMax: 256 * 1024,
  /**
   * Refund requests one server works on at once, counted from the moment each arrives (before its
   * body is read) until it is answered and its work is done. Beyond it an agent is told 429 at
   * once (nothing written; the same request id is safe to send again) rather than queued behind
   * work it would wait seconds for: latency stays bounded under overload, and memory too. At the
   * few hundred refunds a second a server answers, 128 is well under a second of work. One agent
   * holds at most an equal share of them among the agents holding places, or three quarters of them
   * alone (overload-rules.ts), so a flooding agent cannot take every place from another.
   */
  refundsInFlightMax: 128,
  /**
   * Of those, the refund requests worked on at once; the rest wait their turn in arrival order,
   * costing the event loop nothing. Each turn of the event loop runs the next step of every request
   * at work, so this bounds how long a turn takes, and with it how soon a shed agent, a person's
   * decision or /healthz is answered. With all 128 at work, a shed agent waited some 70 ms at the
   * median under the bench's flood on 2 cores (about one such turn). 32 at work is meant to keep
   * two cores busy still, each waiting on Stripe or a group commit a few ms between its steps; the
   * bench's overload_capacity_per_s (64 connections, so half of them wait) is the check.
   */
  refundsWorkingMax: 32,
  /**
   * While agents are being shed (one was, within `settleInChunksForMs`), the callers of a committed
   * journal batch are settled this many per turn of the event loop (db/group-commit.ts
   * settleInChunks), so a shed agent waiting for its 429 is answered between each few
   * continuations, not after all of them. Not when nobody is shed: settling a batch in pieces
   * splits the next writes over more, smaller batches, and took about a tenth off the capacity.
   */
  settleChunkWhileShedding: 8,
  /** How long after the last shed the batches' callers are still settled a few at a time. */
  settleInChunksForMs: 1_000,
  /**
   * The event loop's delay past which agents' calls are shed (429, nothing written) before any of
   * their work: a loop this late already makes every answer, a person's decision among them, wait
   * as long again. Ordinary garbage collection stays well under it.
   */
  eventLoopDelayShedMs: 50,
  /**
   * Agents' calls in flight below which a late event loop sheds none: with fewer than half the
   * refund requests' bound, the lag is not theirs (a start-up, a download, a busy machine) and
   * turning them away would not cure it; 50 agents at once on a busy machine are still all taken.
   */
  eventLoopShedAgentsMin: 64,
  /** How finely the event loop's delay is sampled (Node's histogram timer). */
  eventLoopResolutionMs: 10,
  /** The window over which the largest delay is kept: a lag is acted on within it and forgotten after the next. */
  eventLoopSampleMs: 100,
  /** The Retry-After of a request shed under overload: a second, as long as the work the bound holds. */
  shedRetryAfterS: 1,
  /**
   * Node's bound on a request's headers, the request line included (its own default, written out):
   * an agent's call and a browser's carry a few hundred bytes, and a path parameter is checked by
   * its route, not by being long.
   */
  headerBytesMax: 16 * 1024,
  /**
   * A request's headers and body must arrive within this long (Node's requestTimeout): a 16 KiB
   * body over the slowest real link takes well under a second, while a client that trickles bytes
   * to hold a connection open (slowloris) is cut off.
   */
  requestReceiveMs: 30_000,
  /**
   * A connection that carries nothing either way for this long is closed (Fastify's
   * connectionTimeout, and keepAliveTimeout between requests on a kept-alive connection): longer than any answer takes to start (an MCP wait answers within 45 s, a
   * stalled CSV download is stopped at 60 s), so only a connection nobody uses is closed.
   */
  connectionIdleMs: 120_000,
  /**
   * Requests one keep-alive connection carries before the server asks the client to open another
   * (Connection: close on the last one): a long-lived connection is spread again across the servers
   * behind a balancer, and the bench's connections (a few hundred requests each) never reach it.
   */
  requestsPerConnectionMax: 10_000,
  /**
   * How long a browser that saw the site over https keeps to https (HSTS max-age): a year, as
   * browsers' preload lists expect. Subdomains are left out: they may be other teams' sites.
   */
  hstsMaxAgeS: 31_536_000,
  /**
   * Connections the kernel holds for the server before it accepts them (Node's default is 511; the
   * kernel caps it at net.core.somaxconn). A burst of agents connecting at once beyond the queue
   * has its handshakes dropped and retried by TCP a second or more later, before any handler runs.
   */
  listenBacklog: 4096,
  /**
   * How often a dispatch checks the facts again when another dispatch on the same payment landed
   * between its check and its write (another process: one process takes turns per payment). Each
   * check is three Stripe reads; past this the refund is refused as stale and goes to a person.
   */
  reservationChecksMax: 20,
  /**
   * The outbox (notifications and callbacks): waits from 5 s doubling to at most 1 h (with jitter,
   * so receivers that failed together are not hit together again), 10 s per attempt, and nothing
   * begun once a message is 24 h old: a message that late is noise.
   */
  outboxBackoffFirstMs: 5_000,
  outboxBackoffMaxMs: 3_600_000,
  outboxAttemptTimeoutMs: 10_000,
  outboxDeliveryWindowMs: 86_400_000,
  /**
   * A message to a person gets 8 attempts, the last about 10.5 minutes after the first (and none
   * once its item is decided or has moved on): by then the item's next message (a reminder, a move
   * up, a breach) says more than a late repeat of this one.
   */
  outboxPersonAttemptsMax: 8,
  /**
   * An agent's callback carries a final status the agent may be waiting on and may not poll for,
   * so it is attempted until 24 h after its first attempt: about 33 attempts at the 1 h cap.
   */
  outboxCallbackRetryMs: 86_400_000,
  /** Messages delivered at once by one process, and at once to one recipient (a hanging receiver holds only its own). */
  outboxConcurrency: 8,
  outboxPerRecipientMax: 2,
  /** Stripe's signature tolerance, checked in both directions. */
  webhookToleranceMs: 300_000,
  /** Ledger rows per page: a screenful or a few; a whole period is the CSV's job. */
  ledgerPageRowsMax: 200,
  ledgerPageRowsDefault: 50,
  /**
   * Reconciliation with Stripe lists refunds at most 20 times in any second: Stripe allows about
   * 100 reads and writes a second per account (test mode fewer) and the gate's sends share them.
   * A bucket of 5 refilled at 15 a second lets at most 5 + 15 through in any one-second window.
   */
  reconcileListBurst: 5,
  reconcileListsPerSecond: 15,
  /** A refund sent just before a period's edge may be recorded just after it: each side is looked for this far across the edges. */
  reconcileSlackMs: 86_400_000,
  /** The longest period one run compares: a year, read in one pass over the journal. */
  reconcilePeriodMsMax: 366 * 86_400_000,
  /** Payment intents one run lists; at 15 lists a second that is about two hours of listing. */
  reconcilePaymentIntentsMax: 100_000,
  /** Refunds one payment may have within a run's period (a payment's refunds cannot exceed what was paid; this is far past any real one). */
  reconcileRefundsPerPaymentMax: 10_000,
  /** Rows kept per category of a run's result (the counts and sums cover every row); the page shows them all. */
  reconcileRowsPerCategoryMax: 1_000,
  /** Runs kept in memory; past it the oldest finished run is forgotten. */
  reconcileRunsKept: 20,
  /**
   * Runs listing Stripe at once, across periods and people: two people comparing two periods each
   * get theirs; past it a start is refused (429) until one finishes. Every run takes its list calls
   * from one bucket, so more at once only makes each slower, while each holds the journal's
   * refunds in memory and is never forgotten while it runs.
   */
  reconcileRunsRunningMax: 2,
  /** Journal entries read per scan while a run reads the journal. */
  reconcileScanBatch: 2_000,
  /**
   * Ledger CSV downloads made at once, across people: each is a worker thread with its own heap
   * and its own connection to the journal file, held while the client reads. Past it a download
   * is refused (429) until one ends.
   */
  ledgerCsvExportsMax: 2,
  /** A ledger CSV download whose client takes nothing for this long is stopped, freeing its slot. */
  ledgerCsvStallMs: 60_000,
  /**
   * The longest one MCP `wait_for_decision` call waits. The MCP SDK's client gives up on a request
   * after 60 s unless its user configured otherwise, and does not count progress notifications as
   * life unless told to; so a call answers well before, leaving 15 s for the last read of Interlock
   * and the answer's way back, and a model that wants to wait longer calls again.
   */
  mcpWaitSecondsMax: 45,
  /** How long a `wait_for_decision` call waits unless told: half the client's default timeout. */
  mcpWaitSecondsDefault: 30,
  /**
   * How long before a session's end an open page warns that it is ending (with "Stay signed in"
   * while the idle limit is the one that ends it): long enough to come back to the tab and click.
   * An idle limit shorter than twice this is warned at its half, so the page is not warned at once.
   */
  sessionWarningMs: 120_000,
  /**
   * While a warning stands, how often a live feed reads its session again: a click on "Stay signed
   * in" in another tab (or any other call) takes the warning away from this one within it.
   */
  sessionWarningRecheckMs: 5_000,
  /**
   * The shortest of those rereads: under a short idle limit (a test's, a strict deployment's) they
   * come at a quarter of the warning's lead, but never more often than this.
   */
  sessionWarningRecheckMinMs: 50,
} as const;
