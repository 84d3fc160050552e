import type Stripe from 'stripe';
import type { Json } from '../shared/json.ts';
import type { Status } from '../shared/statuses.ts';
import type { OpenDatabase } from '../db/open.ts';
import { SqliteJournal } from '../db/journal-store.ts';
import type { InterlockConfig } from './config/schema.ts';
import type { AppClock } from './clock.ts';
import { Gate } from './gate/gate.ts';
import type { KillHook } from './gate/kill-points.ts';
import { loadOrCreateSigningKey, type SigningKey } from './receipts/keys.ts';
import { Authority } from './gate/leases.ts';
import type { JournalStore } from './journal/store.ts';
import { Inbox, type InboxRequest } from './inbox/inbox.ts';
import { policyFromConfig } from './inbox/policy.ts';
import { InboxProjection, projectedWork } from './inbox/projection.ts';
import { JournalFollower } from './live/follower.ts';
import { LiveHub } from './live/hub.ts';
import { ScoreboardProjection } from './scoreboard/projection.ts';
import { StripeRefunds } from './targets/stripe-refunds.ts';

/** Everything the server is made of, wired once: one journal, one gate, one inbox, their views. */
export interface Services {
  config: InterlockConfig;
  clock: AppClock;
  database: OpenDatabase;
  journal: JournalStore;
  target: StripeRefunds;
  authority: Authority;
  gate: Gate;
  inbox: Inbox;
  projection: InboxProjection;
  follower: JournalFollower;
  hub: LiveHub;
  scoreboard: ScoreboardProjection;
  signingKey: SigningKey;
  /** True when refunds go to the embedded local sandbox rather than Stripe test mode. */
  sandbox: boolean;
}

/** What the composition needs from outside. */
export interface ServiceOptions {
  config: InterlockConfig;
  clock: AppClock;
  database: OpenDatabase;
  dataDir: string;
  stripe: Stripe;
  sandbox: boolean;
  killHook?: KillHook;
  /** How long a sender owns an effect (default `limits.claimTtlMs`); crash tests shorten it. */
  claimTtlMs?: number;
  onError?: (effectId: string, error: unknown) => void;
}

/**
 * The key a request is remembered under: the same agent and request id is the same decision
 * forever. A repair child's key also names the request it repairs, a shape no agent's request can
 * have, so an agent can never bind a payload under a repair's effect id before a person accepts it.
 */
export function requestKeyOf(request: InboxRequest): Json {
  const key = { agent: String(request.agent), request_id: request.id };
  return request.repair_of === undefined ? key : { ...key, repair_of: String(request.repair_of) };
}

/** Wire the services. Nothing is read or replayed yet: `startServices` does that. */
export function createServices(options: ServiceOptions): Services {
  const { config, clock, database } = options;
  const journal = new SqliteJournal({ db: database.db, wallClockMs: () => clock.wallMs() });
  const target = new StripeRefunds(options.stripe);
  const authority = new Authority({
    members: (group) => config.groups[group] ?? [],
    maxAgeMs: config.approvalMaxAgeMs,
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
  const projection = new InboxProjection(config.inboxName);
  const follower = new JournalFollower(journal);
  const hub = new LiveHub(() => clock.nowMs());
  const scoreboard = new ScoreboardProjection(config.inboxName);
  follower.on('entry', (entry) => {
    scoreboard.note(entry);
    // Items before and after are built only for someone to hear them (not during a replay).
    if (hub.listening) hub.publishItem(projection.apply(entry));
    else projection.fold(entry);
  });
  const inbox = new Inbox({
    name: config.inboxName,
    gate,
    authority,
    policy: policyFromConfig(config),
    // Open dispatches on the payment count as refunded, in every fact a rule or a person reads;
    // the journal is read before Stripe, as the gate's own check does.
    capture: async (request) => {
      const paymentIntent = String(request.payment_intent);
      return target.capture(paymentIntent, undefined, (await journal.reservations(paymentIntent)).open);
    },
    effectOf: (request) => ({ payment_intent: String(request.payment_intent), amount: request.amount as number }),
    requestKeyOf,
    nowMs: () => clock.nowMs(),
    listChains: async () => {
      await follower.catchUp();
      return projection.ownedIds();
    },
    work: projectedWork(projection, () => follower.catchUp(), (request) => inbox.effectIdOf(request)),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const signingKey = loadOrCreateSigningKey(options.dataDir);
  return { config, clock, database, journal, target, authority, gate, inbox, projection, follower, hub, scoreboard, signingKey, sandbox: options.sandbox };
}

/**
 * Start-up, in the order that keeps every promise: replay the journal into the views, settle
 * whatever a crash left in flight (recheck before any resend), give every settled refusal its
 * one escalation, finish half-done inbox work, and send approvals a crash left unsent.
 */
export async function startServices(services: Services): Promise<void> {
  const { follower, inbox } = services;
  await follower.catchUp();
  await inbox.reconcile(await recoverInFlight(services));
  await inbox.refresh();
  await inbox.executeApproved();
  await follower.catchUp();
}

/**
 * Settle what a crash left in flight (core §4.7) for the chains the projection shows with an
 * open dispatch once it has caught up with the journal: finding them costs nothing per entry of
 * the journal, where asking the journal reads every DISPATCHED ever written.
 */
export async function recoverInFlight(services: Pick<Services, 'follower' | 'projection' | 'gate'>): Promise<Map<string, Status>> {
  await services.follower.catchUp();
  return services.gate.recover({ candidates: services.projection.work.sending() });
}
