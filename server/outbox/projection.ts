import type { NotificationRecord } from '../../shared/api.ts';
import { escalationWhy } from '../../shared/escalation-words.ts';
import type { Entry, MessageEntry } from '../../shared/entries.ts';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import type { Json } from '../../shared/json.ts';
import { approvalsRequired } from '../journal/chain.ts';
import { type DigestItem, MESSAGE_EVENTS, type MessageContent, type MessageEvent } from './types.ts';

const text = (value: Json | undefined): string | null => (typeof value === 'string' ? value : null);
const count = (value: Json | undefined): number | null => (typeof value === 'number' ? value : null);

/**
 * A message's content as the journal holds it, read back field by field: what the outbox wrote
 * (a MessageContent), and for anything else the same shape with what is missing left empty.
 */
export function readContent(value: JsonObject): MessageContent {
  const event = MESSAGE_EVENTS.find((known) => known === value.event) ?? ('escalated' satisfies MessageEvent);
  const items = Array.isArray(value.items)
    ? value.items.filter(isJsonObject).map(
        (item): DigestItem => ({
          effect_id: text(item.effect_id) ?? '',
          request_id: text(item.request_id) ?? '',
          amount: count(item.amount) ?? 0,
          currency: text(item.currency) ?? 'usd',
          why: text(item.why) ?? '',
          due_ms: count(item.due_ms),
          link: text(item.link),
        }),
      )
    : undefined;
  return {
    event,
    effect_id: text(value.effect_id),
    request_id: text(value.request_id),
    agent: text(value.agent),
    amount: count(value.amount),
    currency: text(value.currency),
    why: text(value.why) ?? '',
    reason: text(value.reason),
    group: text(value.group),
    level: count(value.level),
    due_ms: count(value.due_ms),
    link: text(value.link),
    ...(items === undefined ? {} : { items }),
    ...(Array.isArray(value.covers) ? { covers: value.covers.filter((id): id is string => typeof id === 'string') } : {}),
    ...(isJsonObject(value.body) ? { body: value.body } : {}),
  };
}

/** The digest window, on the application clock: a person told of more than a few items in one gets the rest in one digest. */
export const DIGEST_WINDOW_MS = 600_000;
/** Events that tell a person an item waits: these are the ones a digest gathers. */
export const WAITING_EVENTS: readonly string[] = ['escalated', 'moved_up', 'breach'];

/** The digest window a time on the application clock falls in. */
export function digestWindow(atMs: number): number {
  return Math.floor(atMs / DIGEST_WINDOW_MS);
}

/** What the outbox keeps of an item's chain: enough to word a message and to know what is owed. */
export interface ItemContext {
  effectId: string;
  /** The request bound by the first PROPOSED that carries one. */
  request: JsonObject | null;
  currency: string | null;
  /** The newest escalation and whether a decision answered it. */
  escalation: {
    hash: string;
    at_ms: number;
    why: string;
    group: string;
    level: number;
    due_ms: number | null;
    breach: boolean;
    routed_to: string[];
    /** The level of the escalation before it, null for the first: a breach that moved it up, or one at the top. */
    previousLevel: number | null;
    /** How many distinct people must approve it. */
    approvalsRequired: number;
  } | null;
  decided: boolean;
  /** Who approved the newest escalation so far, while it needs more than one (four-eyes). */
  approvers?: string[] | null;
  /** The entry that made the request final (COMMITTED, AMBIGUOUS, a closing DECIDED), with its wall-clock time. */
  final: { kind: 'COMMITTED' | 'AMBIGUOUS' | 'CLOSED'; tsMs: number } | null;
  /** Stripe reported the committed refund failed or canceled, at this wall-clock time. */
  failedAtStripe: { tsMs: number } | null;
}

/** Where one message stands, from its chain alone. */
export interface MessageState {
  id: string;
  event: string;
  about: string | null;
  level: number | null;
  recipient: { kind: string; name: string };
  channel: string;
  content: MessageContent;
  /** The digest that carries it instead of an attempt of its own. */
  held: string | null;
  /** Application clock when it was decided. */
  atMs: number;
  /** Wall clock when it was journaled: the 24 h delivery window runs from here. */
  decidedTsMs: number;
  attempts: number;
  delivered: { atMs: number; detail: string } | null;
  gaveUp: { atMs: number; reason: string } | null;
  lastError: string | null;
  /** Wall clock before which the next attempt must not go; null once nothing more is owed. */
  nextAtMs: number | null;
}

/** Where a message stands on its own chain: delivered, given up, retrying, or not tried yet. */
function deliveryOf(message: MessageState): 'delivered' | 'given_up' | 'retrying' | 'pending' {
  if (message.delivered) return 'delivered';
  if (message.gaveUp) return 'given_up';
  return message.attempts > 0 ? 'retrying' : 'pending';
}

/**
 * One message about an item, as the item page shows it. A message held for a digest has no
 * attempt of its own: once a digest carries it, it stands where that digest stands (delivered,
 * retrying, given up), and until then, or while the digest is not tried yet, it is in_digest.
 */
function notificationRecord(message: MessageState, digest: MessageState | null): NotificationRecord {
  const sent = message.held === null ? message : digest;
  // Attempts are stamped on the wall clock; the page shows them beside `decided_at_ms`, on the
  // application clock. They are moved by the gap between the two clocks when the message sent was
  // decided: the application clock only moves forward, so a delivery never reads as earlier than
  // the decision (in test mode, where the clock is moved by hand, it otherwise did, by hours).
  const onAppClock = (wallMs: number | null | undefined) => (wallMs === null || wallMs === undefined || sent === null ? null : wallMs + (sent.atMs - sent.decidedTsMs));
  const delivery = sent === null ? 'pending' : deliveryOf(sent);
  const status = message.held !== null && delivery === 'pending' ? 'in_digest' : delivery;
  return {
    id: message.id,
    event: message.event,
    level: message.level,
    recipient: message.recipient,
    channel: message.channel,
    decided_at_ms: message.atMs,
    attempts: sent?.attempts ?? 0,
    status,
    delivered_at_ms: onAppClock(sent?.delivered?.atMs),
    next_attempt_at_ms: status === 'retrying' ? onAppClock(sent?.nextAtMs) : null,
    last_error: sent?.lastError ?? null,
    gave_up_reason: sent?.gaveUp?.reason ?? null,
    digest: digest?.id ?? null,
  };
}

/**
 * The outbox's view of the journal, fed every entry by the views' follower: each item's context
 * (for wording messages and knowing what is owed), and every message chain with where it stands.
 * Items touched since the planner last looked are kept in `touched`, so a pass plans only those.
 */
export class OutboxProjection {
  readonly items = new Map<string, ItemContext>();
  readonly messages = new Map<string, MessageState>();
  /** Message ids by the item they are about. */
  readonly byItem = new Map<string, string[]>();
  /** Held message id → the digest that carries it. */
  readonly #covered = new Map<string, string>();
  /** Waiting-item messages per person, channel and digest window: `${person}|${channel}|${window}`. */
  readonly #perWindow = new Map<string, number>();
  /** Items with a new entry since `takeTouched`. */
  #touched = new Set<string>();

  note(entry: Entry): void {
    switch (entry.kind) {
      case 'MESSAGE':
        this.#message(entry);
        return;
      case 'ATTEMPT': {
        const state = this.messages.get(entry.effect_id);
        if (!state) return;
        state.attempts = Math.max(state.attempts, entry.n);
        if (entry.outcome === 'delivered') {
          state.delivered = { atMs: entry.at_ms, detail: entry.detail };
          state.nextAtMs = null;
        } else {
          state.lastError = entry.detail;
          state.nextAtMs = entry.next_at_ms;
        }
        return;
      }
      case 'GAVE_UP': {
        const state = this.messages.get(entry.effect_id);
        if (!state) return;
        state.gaveUp = { atMs: entry.at_ms, reason: entry.reason };
        state.nextAtMs = null;
        return;
      }
      default:
        this.#item(entry);
    }
  }

  /** The items touched since the last call, and forget them. */
  takeTouched(): string[] {
    const touched = [...this.#touched];
    this.#touched = new Set();
    return touched;
  }

  /** The messages about one item, oldest first. */
  messagesAbout(effectId: string): MessageState[] {
    return (this.byItem.get(effectId) ?? []).map((id) => this.messages.get(id)!).filter(Boolean);
  }

  /** Who was told about one item, over which channel, and whether it reached them: the item page's list, oldest first. */
  notificationsAbout(effectId: string): NotificationRecord[] {
    return this.messagesAbout(effectId).map((message) => notificationRecord(message, this.#carrierOf(message)));
  }

  /** How many waiting-item messages a person's channel was sent or held in a digest window. */
  sentInWindow(person: string, channel: string, window: number): number {
    return this.#perWindow.get(`${person}|${channel}|${window}`) ?? 0;
  }

  /** Messages held for a digest that no digest carries yet. */
  held(): MessageState[] {
    return [...this.messages.values()].filter((s) => s.held !== null && !this.#covered.has(s.id));
  }


  /**
   * Messages still owed an attempt whose time has come (wall clock), oldest first, and messages
   * whose last attempt failed but whose GAVE_UP was never journaled (a crash between the two): the
   * worker gives those up.
   */
  due(wallMs: number): MessageState[] {
    const due: MessageState[] = [];
    for (const state of this.messages.values()) {
      if (state.held !== null || state.delivered !== null || state.gaveUp !== null) continue;
      const ended = state.attempts > 0 && state.nextAtMs === null;
      if (ended || (state.nextAtMs !== null && state.nextAtMs <= wallMs)) due.push(state);
    }
    return due;
  }

  /** Messages decided but neither delivered nor given up (held ones included: their digest carries them). */
  undelivered(): MessageState[] {
    return [...this.messages.values()].filter((s) => s.delivered === null && s.gaveUp === null && s.held === null);
  }

  /** The digest that carries a held message, once one is decided. */
  #carrierOf(message: MessageState): MessageState | null {
    const digest = message.held === null ? undefined : this.#covered.get(message.id);
    return digest === undefined ? null : (this.messages.get(digest) ?? null);
  }

  #message(entry: MessageEntry): void {
    const state: MessageState = {
      id: entry.effect_id,
      event: entry.event,
      about: entry.about,
      level: entry.level,
      recipient: entry.recipient,
      channel: entry.channel,
      content: readContent(entry.content),
      held: entry.held,
      atMs: entry.at_ms,
      decidedTsMs: entry.ts_ms,
      attempts: 0,
      delivered: null,
      gaveUp: null,
      lastError: null,
      nextAtMs: entry.held === null ? entry.ts_ms : null,
    };
    this.messages.set(state.id, state);
    for (const held of state.content.covers ?? []) this.#covered.set(held, state.id);
    if (entry.recipient.kind === 'person' && WAITING_EVENTS.includes(entry.event)) {
      const key = `${entry.recipient.name}|${entry.channel}|${digestWindow(entry.at_ms)}`;
      this.#perWindow.set(key, (this.#perWindow.get(key) ?? 0) + 1);
    }
    if (entry.about !== null) {
      const list = this.byItem.get(entry.about) ?? [];
      list.push(state.id);
      this.byItem.set(entry.about, list);
    }
  }

  #item(entry: Entry): void {
    let item = this.items.get(entry.effect_id);
    if (!item) {
      item = { effectId: entry.effect_id, request: null, currency: null, escalation: null, decided: false, final: null, failedAtStripe: null };
      this.items.set(entry.effect_id, item);
    }
    this.#touched.add(entry.effect_id);
    switch (entry.kind) {
      case 'PROPOSED':
        if (item.request === null && entry.request !== undefined) item.request = entry.request;
        if (item.currency === null && isJsonObject(entry.premises) && typeof entry.premises.currency === 'string') item.currency = entry.premises.currency;
        return;
      case 'ESCALATED':
        item.escalation = {
          hash: entry.hash,
          at_ms: entry.at_ms,
          why: escalationWhy(entry),
          group: entry.group,
          level: entry.level,
          due_ms: entry.due_ms,
          breach: entry.breach,
          routed_to: entry.routed_to,
          previousLevel: item.escalation?.level ?? null,
          approvalsRequired: approvalsRequired(entry),
        };
        item.approvers = null;
        if (item.currency === null && typeof entry.facts.currency === 'string') item.currency = entry.facts.currency;
        item.decided = false;
        return;
      case 'DECIDED':
        // An approval short of the count a two-approver escalation needs leaves it waiting for the others.
        if (item.escalation?.hash === entry.escalation) {
          if (entry.decision === 'approve') item.approvers = [...new Set([...(item.approvers ?? []), entry.by])];
          if (entry.decision !== 'approve' || (item.approvers?.length ?? 0) >= item.escalation.approvalsRequired) item.decided = true;
        }
        if (entry.decision !== 'approve' && item.final === null) item.final = { kind: 'CLOSED', tsMs: entry.ts_ms };
        return;
      case 'COMMITTED':
        item.final ??= { kind: 'COMMITTED', tsMs: entry.ts_ms };
        return;
      case 'AMBIGUOUS':
        item.final ??= { kind: 'AMBIGUOUS', tsMs: entry.ts_ms };
        return;
      case 'CONFIRMED':
        if ((entry.status === 'failed' || entry.status === 'canceled') && item.final?.kind === 'COMMITTED') item.failedAtStripe ??= { tsMs: entry.ts_ms };
        return;
      default:
        return;
    }
  }
}
