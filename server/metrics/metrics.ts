import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { JournalStore } from '../journal/store.ts';
import { GLOBAL_FAMILY, type StripeBudget } from '../stripe/budget.ts';
import { INTERLOCK_VERSION } from '../journal/version.ts';
import type { Views } from '../views/views.ts';
import { JournalUnavailableError } from '../views/failures.ts';
import { itemFigures } from './figures.ts';
import type { RefundOutcomeCounts } from './refund-outcomes.ts';
import type { WholePassCounts } from '../integrity/whole-pass.ts';
import { pgTimingsRegistry } from '../../db/pg/timings.ts';

/** What the metrics read, all of it already kept by the services. */
/** What the admission check reports of itself (server/http/overload.ts), as the figures read it. */
export interface OverloadFigures {
  /** Agents' calls (any of `/v1`) being answered or worked on. */
  agentsInFlight(): number;
  /** Places held by refund requests, at work or waiting their turn. */
  refundsInFlight(): number;
  /** Refund requests at work. */
  refundsWorking(): number;
  /** Requests shed since the start, by why. */
  shed(): Readonly<Record<string, number>>;
}

export interface MetricsSources {
  views: Views;
  /** The journal the views follow (through their guard): its head, to measure how far behind they are. */
  journal: JournalStore;
  budget: StripeBudget;
  /** The statuses refund requests reached, as the outcome lines tell them. */
  refundOutcomes?: RefundOutcomeCounts;
  /** What the background pass over the whole journal has done (an app built without it shows none). */
  wholePass?: WholePassCounts;
  /** The configured groups, as the config in force names them: each has a queue figure, 0 when nothing waits for it. */
  groups: () => readonly string[];
  /** The admission check's counts: requests shed and held, when the app sheds (an app built without it shows none). */
  overload?: OverloadFigures;
}

/**
 * Latency buckets in seconds: a status read answers in milliseconds; a refund's answer waits for
 * its Stripe calls (a second or two) and is given up on at `limits.refundAnswerWithinMs`.
 */
const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Stripe's answers, in seconds: tens of milliseconds for a read, up to the SDK's 30-second timeout. */
const STRIPE_LATENCY_BUCKETS_S = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The process's own figures (CPU, memory, event loop lag, GC, handles) are the process's, not an
 * app's: they are collected once per process, however many apps it builds (tests build hundreds),
 * and shown by each.
 */
let processRegistry: Registry | null = null;
function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * Interlock's metrics in Prometheus' text format. Requests and webhooks are observed as they are
 * answered; everything else is read when scraped, from the views, the journal's head and the
 * Stripe budget, so a figure is never counted twice or missed across restarts.
 */
export class InterlockMetrics {
  readonly #sources: MetricsSources;
  readonly #registry = new Registry();
  readonly #latency = new Histogram({
    name: 'interlock_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route pattern (not the raw URL), method and status code.',
    labelNames: ['route', 'method', 'status_code'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.#registry],
  });
  readonly #stripeLatency = new Histogram({
    name: 'interlock_stripe_request_duration_seconds',
    help: 'Time Stripe took to answer each call this process made, by endpoint and outcome (ok, rate_limited, client_error, server_error, network_error); the wait for a place in the Stripe budget is not in it.',
    labelNames: ['endpoint', 'outcome'] as const,
    buckets: STRIPE_LATENCY_BUCKETS_S,
    registers: [this.#registry],
  });
  readonly #refundRequests = new Counter({
    name: 'interlock_refund_requests_total',
    help: 'Statuses refund requests reached (final or waiting; a send under way is none), each once per request, as the outcome log lines tell them, since this process started.',
    labelNames: ['status'] as const,
    registers: [this.#registry],
  });
  readonly #webhooks = new Counter({
    name: 'interlock_stripe_webhooks_total',
    help: "Stripe webhook deliveries answered, by status code (200 taken, 400 refused signature or body, 503 the journal is unavailable and Stripe delivers again).",
    labelNames: ['status_code'] as const,
    registers: [this.#registry],
  });
  readonly #gauge = (name: string, help: string, labelNames: readonly string[] = []) => new Gauge({ name, help, labelNames, registers: [this.#registry] });
  readonly #queued = this.#gauge('interlock_queue_items', 'Open escalations waiting for a person, by the group they are routed to now.', ['group']);
  readonly #breached = this.#gauge('interlock_breached_items', 'Open escalations past the deadline at the top of their route, by group.', ['group']);
  readonly #sending = this.#gauge('interlock_sends_in_flight', 'Refunds dispatched to Stripe with no outcome journaled yet.');
  readonly #waitingTurn = this.#gauge('interlock_requests_waiting_turn', 'Refund requests journaled to wait their turn for the Stripe budget.');
  readonly #callsWaiting = this.#gauge('interlock_stripe_calls_waiting', 'Stripe calls of this process waiting for a place in the Stripe budget.');
  readonly #ambiguous = this.#gauge('interlock_ambiguous_items', 'Refunds whose outcome nobody can know (AMBIGUOUS): never sent again, a person must look.');
  readonly #stripeCalls = this.#counterOf('interlock_stripe_calls_total', 'Stripe calls this process made, by endpoint.');
  readonly #stripe429s = this.#counterOf('interlock_stripe_rate_limited_total', 'Stripe 429 answers this process met, by endpoint.');
  readonly #budgetLimit = this.#gauge('interlock_stripe_budget_calls_per_second', 'Stripe calls a second Interlock allows itself on the account (its configured share of Stripe\'s limits, halved for a while after a 429): in all, and per endpoint.', ['scope']);
  readonly #budgetHeld = this.#gauge('interlock_stripe_budget_held', 'Places in the Stripe budget this process holds now: calls granted, out, or in their second after the answer.');
  readonly #budgetLeft = this.#gauge('interlock_stripe_budget_left', 'Stripe calls still free in the current second, as this process sees it: the limit less the places it holds (processes sharing the account each count their own).');
  readonly #entries = this.#gauge('interlock_journal_entries', 'Entries in the journal.');
  readonly #lag = this.#gauge('interlock_views_lag_entries', 'Journal entries the views had not applied yet when scraped (another process writing, or a slow catch-up).');
  readonly #available = this.#gauge('interlock_journal_available', '1 while the journal passes its checks; 0 once one failed (every journal route answers 503 until a restart).');
  readonly #shed = new Counter({
    name: 'interlock_shed_total',
    help: "Agents' requests shed under overload (429 rate_limited, Retry-After, nothing written) before any work, by why: refunds_in_flight (every place taken), agent_share (that agent holds its share), event_loop_delay.",
    labelNames: ['reason'] as const,
    registers: [this.#registry],
  });
  readonly #passes = new Counter({ name: 'interlock_journal_pass_completed_total', help: 'Background passes over the whole journal that completed with every entry, chain and the newest checkpoint holding, since this process started.', registers: [this.#registry] });
  readonly #passEntries = new Counter({ name: 'interlock_journal_pass_entries_total', help: 'Entries the background passes verified against the global chain, since this process started.', registers: [this.#registry] });
  readonly #passDamage = new Counter({ name: 'interlock_journal_pass_damage_total', help: 'Damage the background pass found (the journal then answers 503 journal_unavailable until a restart).', registers: [this.#registry] });
  readonly #passDerivedChecks = new Counter({ name: 'interlock_journal_pass_derived_checks_total', help: 'Checks of the derived tables at their newest mark, recomputed from the journal, that held, since this process started.', registers: [this.#registry] });
  readonly #passDerivedMismatch = new Counter({ name: 'interlock_journal_pass_derived_mismatch_total', help: 'Derived tables the background pass found to differ from the journal (503 journal_unavailable until the tables are rebuilt with npm run rebuild-views and the server restarted).', registers: [this.#registry] });
  readonly #passSeconds = this.#gauge('interlock_journal_pass_last_duration_seconds', 'How long the last completed background pass over the whole journal took, its sleeps included.');
  readonly #agentsInFlight = this.#gauge('interlock_agent_requests_in_flight', "Agents' calls (any of /v1) taken and not yet answered.");
  readonly #refundsInFlight = this.#gauge('interlock_refund_requests_in_flight', 'Places held by refund requests taken: at work or waiting their turn to work.');
  readonly #refundsWorking = this.#gauge('interlock_refund_requests_working', 'Refund requests at work now (the rest of those in flight wait their turn).');
  readonly #messages = this.#gauge('interlock_outbox_messages', 'Messages to people and agents, by channel (callback: agents) and delivery state.', ['channel', 'delivery']);

  constructor(sources: MetricsSources) {
    this.#sources = sources;
    sources.budget.callTimes.listen((endpoint, outcome, seconds) => this.#stripeLatency.observe({ endpoint, outcome }, seconds));
    // Which Interlock answers, as Prometheus names a build: the value is always 1, the version its label.
    this.#gauge('interlock_build_info', 'Always 1; the version label names the Interlock that answers (package.json).', ['version']).set({ version: INTERLOCK_VERSION }, 1);
  }

  /** A Prometheus counter whose value is read at scrape time from a count the budget keeps. */
  #counterOf(name: string, help: string): Counter<'endpoint'> {
    return new Counter({ name, help, labelNames: ['endpoint'] as const, registers: [this.#registry] });
  }

  /** One answered request: its route pattern (`(unmatched)` for a 404 no route took), method, status and time. */
  observeRequest(route: string, method: string, statusCode: number, seconds: number): void {
    this.#latency.observe({ route, method, status_code: String(statusCode) }, seconds);
  }

  /** One Stripe webhook delivery answered. */
  observeWebhook(statusCode: number): void {
    this.#webhooks.inc({ status_code: String(statusCode) });
  }

  /** Every metric, read now, in Prometheus' text format. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    await this.#read();
    const merged = Registry.merge([processMetrics(), pgTimingsRegistry, this.#registry]);
    return { contentType: this.#registry.contentType, text: await merged.metrics() };
  }

  async #read(): Promise<void> {
    const { views, journal, budget, overload } = this.#sources;
    this.#readBudget(budget);
    if (this.#sources.refundOutcomes !== undefined) setCounter(this.#refundRequests, 'status', this.#sources.refundOutcomes.byLabel());
    if (overload !== undefined) this.#readOverload(overload);
    if (this.#sources.wholePass !== undefined) this.#readWholePass(this.#sources.wholePass);
    const unavailable = views.unavailable !== null;
    this.#available.set(unavailable ? 0 : 1);
    if (unavailable) return;
    // The lag is measured before the views catch up (reading them makes it nothing). The newest
    // seq is one read of the last seal; counting the entries would read a whole index each scrape.
    this.#lag.set(Math.max(0, (await journal.newestSeq()) - (views.head?.seq ?? 0)));
    // While the derived tables are rebuilt at start the lag is the rebuild's progress: the rest
    // waits for the replay's end, so a scrape answers now with the figures it read before.
    const rebuilding = views.rebuilding;
    if (rebuilding !== null) {
      this.#entries.set(rebuilding.size);
      return;
    }
    let caught: Awaited<ReturnType<typeof views.current>>;
    try {
      caught = await views.current();
    } catch (error) {
      // This scrape is what found the journal damaged: say so in the figures, as the next one will.
      if (!(error instanceof JournalUnavailableError)) throw error;
      this.#available.set(0);
      return;
    }
    // The follower counted every entry it applied, from the checkpoint's size at a start.
    this.#entries.set(views.head?.size ?? 0);
    const items = itemFigures(caught.inbox.chains.values(), (summary) => caught.inbox.owned(summary));
    setByLabel(this.#queued, 'group', items.queuedByGroup, this.#sources.groups());
    setByLabel(this.#breached, 'group', items.breachedByGroup, this.#sources.groups());
    this.#sending.set(items.sending);
    this.#ambiguous.set(items.ambiguous);
    this.#waitingTurn.set(views.waitingTurns);
    this.#messages.reset();
    for (const [key, count] of await caught.outbox.figures()) {
      const [channel = '', delivery = ''] = key.split(' ');
      this.#messages.set({ channel, delivery }, count);
    }
  }

  #readWholePass(pass: WholePassCounts): void {
    for (const [counter, value] of [[this.#passes, pass.passes], [this.#passEntries, pass.entries], [this.#passDamage, pass.damage], [this.#passDerivedChecks, pass.derivedChecks], [this.#passDerivedMismatch, pass.derivedMismatches]] as const) {
      counter.reset();
      counter.inc(value);
    }
    if (pass.lastPassSeconds !== null) this.#passSeconds.set(pass.lastPassSeconds);
  }

  #readOverload(overload: OverloadFigures): void {
    this.#shed.reset();
    for (const [reason, count] of Object.entries(overload.shed())) this.#shed.inc({ reason }, count);
    this.#agentsInFlight.set(overload.agentsInFlight());
    this.#refundsInFlight.set(overload.refundsInFlight());
    this.#refundsWorking.set(overload.refundsWorking());
  }

  #readBudget(budget: StripeBudget): void {
    setCounter(this.#stripeCalls, 'endpoint', Object.entries(budget.counts.calls));
    setCounter(this.#stripe429s, 'endpoint', Object.entries(budget.counts.rateLimited));
    // The account's limit for Interlock at today's penalty, not the slots held this instant: an
    // idle process sharing the account holds none, yet its next call would get one.
    const capacity = budget.capacity;
    const { penalty } = budget;
    const all = Math.floor(capacity.globalPerWindow * penalty);
    this.#budgetLimit.set({ scope: 'all' }, all);
    this.#budgetLimit.set({ scope: 'endpoint' }, Math.floor(capacity.endpointPerWindow * penalty));
    const held = budget.demand().get(GLOBAL_FAMILY)?.held ?? 0;
    this.#budgetHeld.set(held);
    this.#budgetLeft.set(Math.max(0, all - held));
    this.#callsWaiting.set(budget.waiting);
  }
}

/** A gauge with one series per label value (0 for each of `zeros` it lacks); values gone since the last scrape are dropped. */
function setByLabel(gauge: Gauge, label: string, counts: ReadonlyMap<string, number>, zeros: readonly string[] = []): void {
  gauge.reset();
  for (const value of zeros) gauge.set({ [label]: value }, 0);
  for (const [value, count] of counts) gauge.set({ [label]: value }, count);
}

/** A counter set to the counts kept elsewhere, one series per value of `label` (they only grow while the process runs). */
function setCounter<L extends string>(counter: Counter<L>, label: L, counts: Iterable<readonly [string, number]>): void {
  counter.reset();
  for (const [value, count] of counts) counter.inc({ [label]: value } as Record<L, string>, count);
}
