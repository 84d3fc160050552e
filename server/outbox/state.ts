import type { NotificationRecord } from '../../shared/api.ts';
import { escalationWhy } from '../../shared/escalation-words.ts';
import type { Entry, MessageEntry } from '../../shared/entries.ts';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import type { Json } from '../../shared/json.ts';
import { approvalsRequired } from '../journal/chain.ts';
import { type DigestItem, MESSAGE_EVENTS, type MessageContent, type MessageEvent } from './types.ts';

// The outbox's state of one chain, folded from its entries alone: an item's context (what wording
// a message and knowing what is owed need) and a message's delivery. Pure: the projection, the
// views' table-backed outbox and the derived tables' check fold with these same functions.

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
export function notificationRecord(message: MessageState, digest: MessageState | null): NotificationRecord {
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

/** An item's context before any of its entries. */
export function newItem(effectId: string): ItemContext {
  return { effectId, request: null, currency: null, escalation: null, decided: false, final: null, failedAtStripe: null };
}

/** Fold one entry of an item's chain into its context (in place). */
export function foldItem(item: ItemContext, entry: Entry): void {
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

/** A message as its MESSAGE entry decided it, before any attempt. */
export function newMessage(entry: MessageEntry): MessageState {
  return {
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
}

/** Fold an ATTEMPT or a GAVE_UP into its message's state (in place); other entries change nothing. */
export function foldMessage(state: MessageState, entry: Entry): void {
  if (entry.kind === 'ATTEMPT') {
    state.attempts = Math.max(state.attempts, entry.n);
    if (entry.outcome === 'delivered') {
      state.delivered = { atMs: entry.at_ms, detail: entry.detail };
      state.nextAtMs = null;
    } else {
      state.lastError = entry.detail;
      state.nextAtMs = entry.next_at_ms;
    }
  } else if (entry.kind === 'GAVE_UP') {
    state.gaveUp = { atMs: entry.at_ms, reason: entry.reason };
    state.nextAtMs = null;
  }
}

/** A waiting-item message's count key: `${person}|${channel}|${window}`, or null for a message no window counts. */
export function windowKey(message: Pick<MessageState, 'recipient' | 'event' | 'channel' | 'atMs'>): string | null {
  if (message.recipient.kind !== 'person' || !WAITING_EVENTS.includes(message.event)) return null;
  return `${message.recipient.name}|${message.channel}|${digestWindow(message.atMs)}`;
}
