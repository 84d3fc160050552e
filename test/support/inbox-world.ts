import { MemoryJournal } from '../../db/journal-store.ts';
import type { JsonObject } from '../../shared/json.ts';
import { Gate } from '../../server/gate/gate.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { Authority } from '../../server/gate/leases.ts';
import type { Tier } from '../../server/gate/target.ts';
import { Inbox, type InboxPolicy, type InboxRequest, type Route } from '../../server/inbox/inbox.ts';
import { MemoryPayments } from '../../server/targets/memory-payments.ts';

/** Reasons that come from a crash: they go to payments ops (inbox §20.4, plus target_error as in the routing tests). */
export const CRASH_REASONS = new Set(['ambiguous', 'stale_premise_at_recovery', 'lease_at_recovery', 'target_error']);

export const HOUR_MS = 3_600_000;

/** The rules and routes of the synthetic day (inbox §20.4), over the simulator's facts. */
type WhenRoute = Route & { when: (item: { request: InboxRequest; reason: string }) => boolean };

export function simulatorPolicy(options: { limit?: number; slaMs?: number; firstRoutes?: WhenRoute[] } = {}): InboxPolicy {
  const limit = options.limit ?? 50;
  const slaMs = options.slaMs ?? 4 * HOUR_MS;
  const routes: WhenRoute[] = [
    ...(options.firstRoutes ?? []),
    { name: 'flagged', chain: ['risk'], slaMs: null, when: (i) => i.request.flagged === true },
    { name: 'crash', chain: ['payments-ops'], slaMs: null, when: (i) => CRASH_REASONS.has(i.reason) },
    { name: 'large', chain: ['controller', 'finance-manager'], slaMs, when: (i) => (i.request.amount as number) > 200 },
    { name: 'default', chain: ['ap-leads', 'finance-manager'], slaMs, when: () => true },
  ];
  // Each rule: its name, its check, and its words when it fails.
  const rules: [string, (r: InboxRequest, f: JsonObject) => boolean, string][] = [
    [`amount under $${limit}`, (r) => (r.amount as number) <= limit, `over $${limit}`],
    ['customer not flagged', (r) => r.flagged !== true, 'customer flagged'],
    ['order eligible', (_r, f) => f.eligible === true, 'order not eligible'],
  ];
  return {
    ruleNames: rules.map(([name]) => name),
    evaluate(request, facts) {
      const failed = rules.filter(([, check]) => !check(request, facts)).map(([rule, , words]) => ({ rule, words }));
      return { passed: failed.length === 0, failed };
    },
    route: (item) => routes.find((r) => r.when(item))!,
    routeByName: (name) => routes.find((r) => r.name === name),
  };
}

/** An inbox over the simulator with the §24 setup: orders of 400, five groups, approvals valid 4 h, clock at 1000. */
export interface InboxWorld {
  target: MemoryPayments;
  journal: JournalStore;
  groups: Record<string, string[]>;
  clock: { nowMs: number; wallMs: number };
  inbox: Inbox;
  /** Another inbox (and gate) on the same journal, as a restarted or second process would be; or on `journal`, another server's handle on it. */
  newInbox(journal?: JournalStore): Inbox;
  /** A request for a fresh order of 400. */
  request(amount: number, extra?: JsonObject): InboxRequest;
  effectIdOf(request: InboxRequest): string;
}

export function buildInboxWorld(options: { tier?: Tier; journal?: JournalStore; policy?: InboxPolicy } = {}): InboxWorld {
  const target = new MemoryPayments(options.tier ?? 1);
  const groups: Record<string, string[]> = {
    'ap-leads': ['ana'],
    controller: ['cy'],
    'finance-manager': ['fm'],
    'payments-ops': ['ops'],
    risk: ['rita'],
  };
  const clock = { nowMs: 1_000, wallMs: 1_700_000_000_000 };
  const journal = options.journal ?? new MemoryJournal({ wallClockMs: () => clock.wallMs });
  const policy = options.policy ?? simulatorPolicy();
  const newInbox = (on: JournalStore = journal) => {
    const authority = new Authority({ members: (g) => groups[g] ?? [], maxAgeMs: 4 * HOUR_MS, nowMs: () => clock.nowMs });
    const gate = new Gate({ journal: on, target, leases: authority, wallClockMs: () => clock.wallMs });
    return new Inbox({
      name: 'inbox',
      gate,
      authority,
      policy,
      capture: async (request) => target.capture(request.order as string),
      effectOf: (request) => ({ order: request.order as string, amount: request.amount as number }),
      requestKeyOf: (request) => request.id,
      nowMs: () => clock.nowMs,
    });
  };
  let orders = 0;
  const request = (amount: number, extra: JsonObject = {}): InboxRequest => {
    orders += 1;
    const order = String(orders);
    if (!target.orders.has(order)) target.addOrder(order, 400);
    return { id: `r${orders}`, order, amount, ...extra };
  };
  const inbox = newInbox();
  return { target, journal, groups, clock, inbox, newInbox, request, effectIdOf: (r) => inbox.effectIdOf(r) };
}

/**
 * A request whose order of `orderAmount` gets `handCents` refunded by hand right after the facts
 * are first captured: stale by the time anyone decides on it. The target's earlier `onTouch` still runs.
 */
export function staleRequest(world: InboxWorld, amount: number, handCents: number, orderAmount = 100) {
  const r = world.request(amount);
  world.target.orders.get(r.order as string)!.amountCents = orderAmount;
  let fired = false;
  const previous = world.target.onTouch;
  world.target.onTouch = (order) => {
    previous?.(order);
    if (order === r.order && !fired) {
      fired = true;
      world.target.refundByHand(order, handCents);
    }
  };
  return r;
}
