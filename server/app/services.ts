import type { Checkpoints } from '../../db/port/checkpoints.ts';
import { type Liveness, withLiveApprovals } from '../inbox/approvals.ts';
import { randomUUID } from 'node:crypto';
import type Stripe from 'stripe';
import type { Json } from '../../shared/json.ts';
import type { Status } from '../../shared/statuses.ts';
import type { Storage } from '../../db/port/storage.ts';
import type { InterlockConfig } from '../config/schema.ts';
import type { AppClock } from './clock.ts';
import { Gate } from '../gate/gate.ts';
import type { KillHook } from '../gate/kill-points.ts';
import { loadOrCreateSigningKey, type SigningKey } from '../receipts/keys.ts';
import { Authority } from '../gate/leases.ts';
import type { JournalStore } from '../journal/store.ts';
import { Inbox, type InboxRequest } from '../inbox/inbox.ts';
import { livePolicy } from '../inbox/policy.ts';
import { LiveConfig } from '../config/live.ts';
import { StripeRefunds } from '../targets/stripe-refunds.ts';
import { refundEffectOf } from '../refunds/effect.ts';
import { Outbox, type OutboxLog } from '../outbox/outbox.ts';
import type { Channels } from '../outbox/types.ts';
import { CurrentFactsCache, type FactsScheduler, openItemsOf, openPaymentIntentOf, shownFactsOf } from '../facts/current-facts.ts';
import { PaymentPanels } from '../facts/payment-panel.ts';
import { Views, type ViewsLog } from '../views/views.ts';
import { type BudgetClock, capacityFor, REAL_BUDGET_CLOCK, StripeBudget } from '../stripe/budget.ts';
import { BudgetSlots } from '../stripe/budget-slots.ts';
import { attachBudget } from '../stripe/paced-client.ts';
import { TurnQueue } from '../stripe/turn-queue.ts';
import { LoopPressure } from './loop-pressure.ts';
import { RefundOutcomeCounts } from '../metrics/refund-outcomes.ts';
import { WholePassCounts } from '../integrity/whole-pass.ts';
import { loggedWorkLeases, type WorkLeases } from './work-leases.ts';

/** Everything the server is made of, wired once: one journal, one gate, one inbox, their views. */
export interface Services {
  /** The config in force: `configs.current`, read again at each use, since a reload replaces it. */
  readonly config: InterlockConfig;
  /** Whether agents are being shed now: the admission check tells it, the journal's commits read it. */
  loopPressure: LoopPressure;
  /** The config in force, and its one way to change while running (server/app/reload.ts). */
  configs: LiveConfig;
  clock: AppClock;
  /** Where everything is kept: reached through the services, never by a route. */
  storage: Storage;
  /** The journal behind the views' guard (`views.journal`): refused once it failed a check. */
  journal: JournalStore;
  target: StripeRefunds;
  authority: Authority;
  gate: Gate;
  inbox: Inbox;
  /** The inbox, the scoreboard and the live feed: every read of them goes through here. */
  views: Views;
  /** Messages to people and agents: decided from the journal, journaled, delivered with retries. */
  outbox: Outbox;
  signingKey: SigningKey;
  /** The signed checkpoints of the journal's global chain, kept apart from the entries. */
  checkpoints: Checkpoints;
  /** True when refunds go to the embedded local sandbox rather than Stripe test mode. */
  sandbox: boolean;
  /** Each open item's payment as Stripe says it is now: display only, apart from the views, never decided on. */
  currentFacts: CurrentFactsCache;
  /** The payment panel of the item page, read through the SDK and kept a minute per item. */
  paymentPanels: PaymentPanels;
  /** A verified Stripe event named this payment (any refund, charge or dispute): what is shown of it is read again. */
  onPaymentEvent(paymentIntent: string): void;
  /** The one Stripe budget every Stripe call of the process draws on. */
  budget: StripeBudget;
  /** Requests waiting their turn to reach Stripe, in arrival order. */
  turns: TurnQueue;
  /** The statuses refund requests reached, counted as they are logged (`interlock_refund_requests_total`). */
  refundOutcomes: RefundOutcomeCounts;
  /** What the background pass over the whole journal has done (`interlock_journal_pass_*`). */
  wholePass: WholePassCounts;
  /** Which background work runs here, among the servers on the database: the work whose lease this server holds. */
  workLeases: WorkLeases;
}

/** What the composition needs from outside. */
export interface ServiceOptions {
  config: InterlockConfig;
  clock: AppClock;
  storage: Storage;
  dataDir: string;
  /** The receipt signing key as the environment places it (receipts/key-file.ts); default: the data folder's, created at first start. */
  signingKey?: SigningKey;
  stripe: Stripe;
  sandbox: boolean;
  killHook?: KillHook;
  /** How long a sender owns an effect (default `limits.claimTtlMs`); crash tests shorten it. */
  claimTtlMs?: number;
  /** One item of a sweep failed (the others went on); a corrupt journal is the views' to report, not this. */
  onError?: (effectId: string, error: unknown) => void;
  /** Where the views log a corrupt journal (default: the console). */
  log?: ViewsLog;
  /** How messages travel (email, Slack, webhooks, callbacks); without them every message is given up as undeliverable. */
  channels?: Channels;
  /** Where the outbox logs a message given up (default: the console). */
  outboxLog?: OutboxLog;
  /** The current-facts cache's clock and waits (default: the wall clock and timers). */
  factsScheduler?: FactsScheduler;
  /** The Stripe budget (default: one at the config's share of the mode's limits, shared as `stripeAccount` says). */
  budget?: StripeBudget;
  /** The Stripe account this process shares a budget for with every process on its database; without it, the budget is the process's alone. */
  stripeAccount?: string;
  /** How long a send tries a busy Stripe again (default `limits.stripeBusyRetryMs`); tests shorten it. */
  busyRetryMs?: number;
}

/** How a process shares its Stripe budget with the others on its database: the account they share it for. */
export interface BudgetSharing {
  /** The storage's budget slots; null where no other process shares it (a storage in memory). */
  slots: Storage['budgetSlots'];
  /** The Stripe account (`stripeAccountOf`): processes share one budget per account. */
  account: string;
  /** The wall clock the processes share, and timers (default: the real ones). */
  clock?: BudgetClock;
  onError?: (error: unknown) => void;
  /** Another process sharing the account is configured for smaller limits (BudgetSlotsOptions.onDisagreement). */
  onDisagreement?: (message: string) => void;
}

/**
 * The budget the config asks for: its share of Stripe's limits for the mode (the sandbox is
 * limited as test mode is). With `sharing`, the capacity is the account's, split among every
 * process on the database through slot rows beside the journal (budget-slots.ts); without it
 * (or on a database in memory) this process has it all.
 */
export function budgetFromConfig(config: Pick<InterlockConfig, 'stripe'>, sharing?: BudgetSharing): StripeBudget {
  const { mode, rateLimits } = config.stripe;
  const overrides = {
    ...(rateLimits.globalPerSecond === null ? {} : { globalPerWindow: rateLimits.globalPerSecond }),
    ...(rateLimits.endpointPerSecond === null ? {} : { endpointPerWindow: rateLimits.endpointPerSecond }),
  };
  const capacity = capacityFor(mode === 'sandbox' ? 'test' : mode, rateLimits.share, overrides);
  const store = sharing?.slots ?? null;
  if (sharing === undefined || store === null) return new StripeBudget({ capacity, ...(sharing?.clock ? { clock: sharing.clock } : {}) });
  const clock = sharing.clock ?? REAL_BUDGET_CLOCK;
  const share = new BudgetSlots({
    store,
    account: sharing.account,
    capacity,
    clock,
    ...(sharing.onError ? { onError: sharing.onError } : {}),
    ...(sharing.onDisagreement ? { onDisagreement: sharing.onDisagreement } : {}),
  });
  return new StripeBudget({ capacity, clock, share });
}

/**
 * The Stripe account a config reaches when nothing more is known: every process in Stripe test
 * (or live) mode on one database shares one account (a database normally serves one), and so does every
 * process on the sandbox unless its address is given (`sandbox <url>`).
 */
export function stripeAccountOf(config: Pick<InterlockConfig, 'stripe'>, sandboxUrl?: string): string {
  if (config.stripe.mode !== 'sandbox') return `stripe ${config.stripe.mode} mode`;
  return sandboxUrl === undefined ? 'sandbox' : `sandbox ${new URL(sandboxUrl).origin}`;
}

/** A slot round that failed is logged, once a minute at most: the next round tries again, and the slots held lapse meanwhile. */
function budgetError(log: ViewsLog | undefined): (error: unknown) => void {
  let lastMs = Number.NEGATIVE_INFINITY;
  return (error) => {
    if (Date.now() - lastMs < 60_000) return;
    lastMs = Date.now();
    (log ?? CONSOLE_LOG).error({ err: error }, 'the Stripe budget could not renew its slots; it tries again, granting less meanwhile');
  };
}

/** Processes budgeting one account differently: said once a minute at most, while it lasts. */
function budgetDisagreement(log: ViewsLog | undefined): (message: string) => void {
  let lastMs = Number.NEGATIVE_INFINITY;
  return (message) => {
    if (Date.now() - lastMs < 60_000) return;
    lastMs = Date.now();
    (log ?? CONSOLE_LOG).error({ code: 'stripe_budget_disagreement' }, message);
  };
}

/** Channels for services built without any (a rebuild, a replay): nothing can be delivered. */
const NO_CHANNELS: Channels = {
  deliver: async () => ({ ok: false, status: null, error: 'this process has no channels to deliver with', retryable: false }),
};

/** The views' log when none is given: one line to stderr. */
const CONSOLE_LOG: ViewsLog & OutboxLog = {
  fatal: (_fields, message) => console.error(message),
  error: (_fields, message) => console.error(message),
  warn: (_fields, message) => console.error(message),
};

/**
 * The key a request is remembered under: the same agent and request id is the same decision
 * forever. A repair child's key also names the request it repairs, a shape no agent's request can
 * have, so an agent can never bind a payload under a repair's effect id before a person accepts it.
 */
export function requestKeyOf(request: Pick<InboxRequest, 'id' | 'repair_of'> & { agent?: Json }): Json {
  const key = { agent: String(request.agent), request_id: request.id };
  return request.repair_of === undefined ? key : { ...key, repair_of: String(request.repair_of) };
}

/** A person's configured display name, else their name: how the inbox, agents and callbacks name a decider. */
export function displayNameOf(config: Pick<InterlockConfig, 'people'>, name: string): string {
  return config.people.find((p) => p.name === name)?.displayName ?? name;
}

/** What approvals are judged against now: the application clock, the approval window, the groups in force. */
export function livenessOf(services: Pick<Services, 'clock' | 'config'>): Liveness {
  const { config } = services;
  return { nowMs: services.clock.nowMs(), maxAgeMs: config.approvalMaxAgeMs, members: (group) => config.groups[group] ?? [] };
}

/** Wire the services. Nothing is read or replayed yet: `startServices` does that. */
export function createServices(options: ServiceOptions): Services {
  const { config, clock, storage } = options;
  // What a reload may change is read from `configs` at each use; the rest of `config` (the inbox's
  // name, Stripe, the journal's wiring) is fixed for the life of the process (server/config/reload-plan.ts).
  const configs = new LiveConfig(config);
  const sharing =
    options.stripeAccount === undefined
      ? undefined
      : { slots: storage.budgetSlots, account: options.stripeAccount, onError: budgetError(options.log), onDisagreement: budgetDisagreement(options.log) };
  const budget = options.budget ?? budgetFromConfig(config, sharing);
  attachBudget(options.stripe, budget);
  const loopPressure = new LoopPressure();
  const stored = storage.journal({ wallClockMs: () => clock.wallMs(), groupCommit: { settleChunk: () => loopPressure.settleChunk() } });
  // The receipt key signs the checkpoints a start is held against: the views start at the newest one.
  const signingKey = options.signingKey ?? loadOrCreateSigningKey(options.dataDir);
  const views = new Views({
    journal: stored,
    inboxName: config.inboxName,
    nowMs: () => clock.nowMs(),
    log: options.log ?? CONSOLE_LOG,
    derived: storage.derived,
    startFrom: 'checkpoint',
    checkpoints: { store: storage.checkpoints, key: signingKey },
  });
  // Everything else reads and writes the journal through the views' guard: once it fails a check,
  // no refund is sent, no message goes out and nothing is written, whoever starts the work.
  const { journal } = views;
  const target = new StripeRefunds(options.stripe);
  const authority = new Authority({
    members: (group) => configs.current.groups[group] ?? [],
    get maxAgeMs() {
      return configs.current.approvalMaxAgeMs;
    },
    nowMs: () => clock.nowMs(),
  });
  const gate = new Gate({
    journal,
    target,
    leases: authority,
    wallClockMs: () => clock.wallMs(),
    ...(options.killHook ? { killHook: options.killHook } : {}),
    ...(options.claimTtlMs === undefined ? {} : { claimTtlMs: options.claimTtlMs }),
  });
  // The facts with the journal position read before them, so the send may reuse the read (gate.ts).
  const captureFresh = async (request: InboxRequest) => {
    const paymentIntent = String(request.payment_intent);
    const reserved = await journal.reservations(paymentIntent);
    const readAtWallMs = clock.wallMs();
    const facts = await target.capture(paymentIntent, undefined, reserved.open);
    return { facts, key: paymentIntent, seq: reserved.seq, readAtWallMs };
  };
  const inbox = new Inbox({
    name: config.inboxName,
    gate,
    authority,
    policy: livePolicy(() => configs.current),
    // Open dispatches on the payment count as refunded, in every fact a rule or a person reads;
    // the journal is read before Stripe, as the gate's own check does.
    capture: async (request) => (await captureFresh(request)).facts,
    captureFresh: (request) => captureFresh(request),
    effectOf: (request) => refundEffectOf(request),
    requestKeyOf,
    nowMs: () => clock.nowMs(),
    work: views.work((request) => inbox.effectIdOf(request)),
    onError: (effectId, error) => {
      if (!views.report(error)) options.onError?.(effectId, error);
    },
    emailsOf: (name) => emailsOfPerson(configs.current, name),
    // Who paid, from the payment read the item page shows (read once now when it has none yet).
    customerEmail: async (effectId, request) => {
      const shown = currentFacts.get(effectId)?.customer;
      if (shown !== undefined && shown !== null) return shown.email;
      const paymentIntent = String(request.payment_intent);
      return (await target.captureForDisplay(paymentIntent, effectId, (await journal.reservations(paymentIntent)).open)).customer?.email ?? null;
    },
  });
  const outbox = new Outbox({
    journal,
    current: async () => (await views.current()).outbox,
    get notifications() {
      return configs.current.notifications;
    },
    channels: options.channels ?? NO_CHANNELS,
    nowMs: () => clock.nowMs(),
    wallMs: () => clock.wallMs(),
    owner: `outbox:${process.pid}:${randomUUID()}`,
    ...(options.killHook ? { killHook: options.killHook } : {}),
    log: options.outboxLog ?? CONSOLE_LOG,
    displayName: (name) => displayNameOf(configs.current, name),
    // A crash test's short claim (INTERLOCK_CLAIM_TTL_MS) holds a message as briefly as an effect.
    ...(options.claimTtlMs === undefined ? {} : { claimTtlMs: options.claimTtlMs }),
  });
  const currentFacts = new CurrentFactsCache({
    ...(options.factsScheduler === undefined ? {} : { scheduler: options.factsScheduler }),
    // As the inbox reads facts: this item's own refund aside, open dispatches counted as refunded.
    capture: async (effectId, paymentIntent) => target.captureForDisplay(paymentIntent, effectId, (await journal.reservations(paymentIntent)).open),
    openItems: async () => openItemsOf((await views.current()).inbox),
    watch: (listener) => views.onChainsMoved((moved, projection) => listener(moved, (effectId) => openPaymentIntentOf(projection, effectId))),
    publish: (effectId, current) => views.publishFacts(effectId, current),
    onError: (effectId, error) =>
      (options.log ?? CONSOLE_LOG).error({ err: error, effectId }, 'current facts could not be read from Stripe; the last good figures stay, marked'),
    // The payment moved under an open item: the inbox shows it again, on facts it reads itself.
    moved: {
      shownOn: async (effectId) => shownFactsOf((await views.current()).inbox, effectId),
      reshow: async (effectId) => (await inbox.reshowOnNewFacts(effectId)) !== null,
      onError: (effectId, error) => {
        if (!views.report(error)) (options.log ?? CONSOLE_LOG).error({ err: error, effectId }, 'an item whose payment moved could not be shown again; the next read tries again');
      },
    },
  });
  views.decorateItems((item) => currentFacts.decorate(withLiveApprovals(item, livenessOf({ clock, config: configs.current }))));
  const paymentPanels = new PaymentPanels({
    stripe: options.stripe,
    listRefunds: (paymentIntent) => target.listRefunds(paymentIntent),
    dashboard: !options.sandbox,
    wallMs: () => clock.wallMs(),
  });
  const onPaymentEvent = (paymentIntent: string) => {
    currentFacts.onPaymentEvent(paymentIntent);
    paymentPanels.forget(paymentIntent);
  };
  const turns = new TurnQueue({
    budget,
    journal,
    inbox,
    nowMs: () => clock.nowMs(),
    onSettled: () => views.refresh(),
    waitingOnJournal: () => views.waitingTurns,
    onError: (effectId, error) => {
      if (!views.report(error)) (options.log ?? CONSOLE_LOG).error({ err: error, effectId }, 'a request waiting its turn for Stripe could not be decided yet; it is tried again');
    },
  });
  return {
    get config() {
      return configs.current;
    },
    configs,
    loopPressure,
    clock,
    storage,
    journal,
    target,
    authority,
    gate,
    inbox,
    views,
    outbox,
    signingKey,
    checkpoints: storage.checkpoints,
    sandbox: options.sandbox,
    currentFacts,
    paymentPanels,
    onPaymentEvent,
    budget,
    turns,
    refundOutcomes: new RefundOutcomeCounts(),
    wholePass: new WholePassCounts(),
    workLeases: loggedWorkLeases(storage.leases, options.log ?? CONSOLE_LOG),
  };
}

/**
 * Start-up, in the order that keeps every promise: replay the journal into the views, settle
 * whatever a crash left in flight (recheck before any resend), give every settled refusal its
 * one escalation, finish half-done inbox work, and send approvals a crash left unsent.
 */
export async function startServices(services: Services): Promise<void> {
  const { views, inbox } = services;
  await views.current();
  await queueWaiting(services);
  await inbox.reconcile(await recoverInFlight(services));
  await inbox.refresh();
  await inbox.executeApproved();
  await views.current();
}

/**
 * Queue again the requests a restart found waiting their turn for Stripe, in journal order (or
 * ones another process accepted long enough ago that it must have stopped: `olderThanWallMs`).
 */
export async function queueWaiting(services: Pick<Services, 'views' | 'journal' | 'turns'>, olderThanWallMs?: number): Promise<void> {
  const { inbox } = await services.views.current();
  const chains = [];
  for (const effectId of inbox.work.unfinished()) {
    if (services.turns.holds(effectId)) continue;
    const chain = await services.journal.entries(effectId);
    if (olderThanWallMs === undefined || (chain[0]?.ts_ms ?? Number.POSITIVE_INFINITY) <= olderThanWallMs) chains.push(chain);
  }
  services.turns.adopt(chains);
}

/**
 * Settle what a crash left in flight (core §4.7) for the chains the inbox projection shows with
 * an open dispatch once it has caught up with the journal: finding them costs nothing per entry
 * of the journal, where asking the journal reads every DISPATCHED ever written.
 */
export async function recoverInFlight(services: Pick<Services, 'views' | 'gate'>): Promise<Map<string, Status>> {
  const { inbox } = await services.views.current();
  return services.gate.recover({ candidates: inbox.work.sending() });
}

/** Every email address the config knows a person by: their own, and those they are notified at. */
export function emailsOfPerson(config: Pick<InterlockConfig, 'people' | 'notifications'>, name: string): string[] {
  const own = config.people.find((p) => p.name === name)?.email ?? null;
  const notified = (config.notifications.people[name] ?? []).flatMap((channel) => (channel.kind === 'email' ? [channel.to] : []));
  return [...(own === null ? [] : [own]), ...notified];
}
