import type { DerivedChange, DerivedRow } from '../../db/port/derived.ts';
import { isJsonObject, type Json, type JsonObject, plain } from '../../shared/json.ts';
import { digestWindow, type ItemContext, type MessageState, readContent, WAITING_EVENTS } from './state.ts';

// The outbox's derived tables, and what each row holds. An item's context and a message's state
// are rows of their own chains (keyed by effect id and message id, folded from that chain alone, so
// the background check refolds them); the indexes beside them join chains: the messages about an
// item in journal order, whether a held message was carried by a digest, the waiting-item messages
// of each person's channel per digest window, and the messages counted by channel and delivery.

/** One row per item chain: its context, open until the item is final. */
export const OUTBOX_ITEMS_VIEW = 'outbox.items';
/** One row per message chain: where it stands, open while an attempt is still owed. */
export const OUTBOX_MESSAGES_VIEW = 'outbox.messages';
/** The messages about each item, keyed `${effect id}/${seq}`: an item's messages list in journal order. */
export const OUTBOX_ABOUT_VIEW = 'outbox.about';
/** One row per message held for a digest: the digest that carries it, open until one does. */
export const OUTBOX_HELD_VIEW = 'outbox.held';
/**
 * Items of an agent's request made final, ordered by the wall-clock time of their last final news
 * (made final, or failed at Stripe later): a start plans again those whose callback may still be
 * owed, as a replay of the whole journal did.
 */
export const OUTBOX_FINALS_VIEW = 'outbox.finals';
/** Waiting-item messages to a person, a row each, ordered by digest window. */
export const OUTBOX_WINDOWS_VIEW = 'outbox.windows';
/** The messages counted by channel and delivery state: one row, moved +new −old with each message. */
export const OUTBOX_FIGURES_VIEW = 'outbox.figures';
/** The one row of the figures' view. */
export const FIGURES_KEY = 'messages';

/** Seqs in index keys, padded so that keys sort as the seqs do. */
const SEQ_DIGITS = 16;

/** A value as the tables keep it: plain JSON, keys left undefined dropped. */
function asJson(value: object): JsonObject {
  const json = plain(value);
  return isJsonObject(json) ? json : {};
}

const text = (value: Json | undefined): string | null => (typeof value === 'string' ? value : null);
const count = (value: Json | undefined): number | null => (typeof value === 'number' ? value : null);
const strings = (value: Json | undefined): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []);
const object = (value: Json | undefined): JsonObject | null => (isJsonObject(value) ? value : null);
const FINAL_KINDS = ['COMMITTED', 'AMBIGUOUS', 'CLOSED'] as const;

/** An item's context as its row holds it, read back field by field. */
export function readItem(value: Json | undefined): ItemContext {
  const item = object(value) ?? {};
  const escalation = object(item.escalation);
  const final = object(item.final);
  const failed = object(item.failedAtStripe);
  return {
    effectId: text(item.effectId) ?? '',
    request: object(item.request),
    currency: text(item.currency),
    escalation:
      escalation === null
        ? null
        : {
            hash: text(escalation.hash) ?? '',
            at_ms: count(escalation.at_ms) ?? 0,
            why: text(escalation.why) ?? '',
            group: text(escalation.group) ?? '',
            level: count(escalation.level) ?? 0,
            due_ms: count(escalation.due_ms),
            breach: escalation.breach === true,
            routed_to: strings(escalation.routed_to),
            previousLevel: count(escalation.previousLevel),
            approvalsRequired: count(escalation.approvalsRequired) ?? 1,
          },
    decided: item.decided === true,
    ...('approvers' in item ? { approvers: Array.isArray(item.approvers) ? strings(item.approvers) : null } : {}),
    final: final === null ? null : { kind: FINAL_KINDS.find((kind) => kind === final.kind) ?? 'CLOSED', tsMs: count(final.tsMs) ?? 0 },
    failedAtStripe: failed === null ? null : { tsMs: count(failed.tsMs) ?? 0 },
  };
}

/** A message's state as its row holds it, read back field by field. */
export function readMessage(value: Json | undefined): MessageState {
  const message = object(value) ?? {};
  const recipient = object(message.recipient) ?? {};
  const delivered = object(message.delivered);
  const gaveUp = object(message.gaveUp);
  return {
    id: text(message.id) ?? '',
    event: text(message.event) ?? '',
    about: text(message.about),
    level: count(message.level),
    recipient: { kind: text(recipient.kind) ?? '', name: text(recipient.name) ?? '' },
    channel: text(message.channel) ?? '',
    content: readContent(object(message.content) ?? {}),
    held: text(message.held),
    atMs: count(message.atMs) ?? 0,
    decidedTsMs: count(message.decidedTsMs) ?? 0,
    attempts: count(message.attempts) ?? 0,
    delivered: delivered === null ? null : { atMs: count(delivered.atMs) ?? 0, detail: text(delivered.detail) ?? '' },
    gaveUp: gaveUp === null ? null : { atMs: count(gaveUp.atMs) ?? 0, reason: text(gaveUp.reason) ?? '' },
    lastError: text(message.lastError),
    nextAtMs: count(message.nextAtMs),
  };
}

/** An item is open work until it is final: until then it may be escalated, decided, or owe an agent's callback. */
export function isOpenItem(item: ItemContext): boolean {
  return item.final === null;
}

/** A message is open work while an attempt of its own is still owed: not held for a digest, not delivered, not given up. */
export function isOpenMessage(message: MessageState): boolean {
  return message.held === null && message.delivered === null && message.gaveUp === null;
}

/** An item's row: its context as folded through its entry at `lastSeq`; its chain began at `order`. */
export function itemRow(item: ItemContext, order: number, lastSeq: number): DerivedRow {
  return { key: item.effectId, order, open: isOpenItem(item), body: { item: asJson(item), last_seq: lastSeq } };
}

export function itemOf(row: DerivedRow): ItemContext {
  return { ...readItem(row.body.item), effectId: row.key };
}

/** An item's row in the finals' index, when it is an agent's request made final. */
export function finalsRow(item: ItemContext): DerivedRow | null {
  if (item.final === null || typeof item.request?.agent !== 'string') return null;
  return { key: item.effectId, order: Math.max(item.final.tsMs, item.failedAtStripe?.tsMs ?? 0), open: false, body: {} };
}

/** A message's row: its state as folded through its entry at `lastSeq`; it was decided at `order`. */
export function messageRow(message: MessageState, order: number, lastSeq: number): DerivedRow {
  return { key: message.id, order, open: isOpenMessage(message), body: { message: asJson(message), last_seq: lastSeq } };
}

/** The seq of the last entry an item's or a message's row folded: a later entry of its chain folds on the row itself. */
export function lastSeqOf(row: DerivedRow): number {
  return typeof row.body.last_seq === 'number' ? row.body.last_seq : 0;
}

export function messageOf(row: DerivedRow): MessageState {
  return { ...readMessage(row.body.message), id: row.key };
}

/** The index key of a message about `about` journaled at `seq`. */
export function aboutKey(about: string, seq: number): string {
  return `${about}/${String(seq).padStart(SEQ_DIGITS, '0')}`;
}

/** The first key past every index key of `about`'s messages. */
export function aboutEnd(about: string): string {
  return `${about}/~`;
}

export function aboutRow(about: string, seq: number, messageId: string): DerivedRow {
  return { key: aboutKey(about, seq), order: 0, open: false, body: { id: messageId } };
}

/** A held message's row: the digest that carries it, or null (open) while none does. */
export function heldRow(messageId: string, digest: string | null): DerivedRow {
  return { key: messageId, order: 0, open: digest === null, body: { digest } };
}

/** The index rows a message decided at `seq` writes: its item's list, its place as held or carrying held ones, its digest window. */
export function indexChanges(message: MessageState, seq: number): DerivedChange[] {
  const changes: DerivedChange[] = [];
  if (message.about !== null) {
    const row = aboutRow(message.about, seq, message.id);
    changes.push({ view: OUTBOX_ABOUT_VIEW, key: row.key, row });
  }
  if (message.held !== null) changes.push({ view: OUTBOX_HELD_VIEW, key: message.id, row: heldRow(message.id, null) });
  for (const held of message.content.covers ?? []) changes.push({ view: OUTBOX_HELD_VIEW, key: held, row: heldRow(held, message.id) });
  const window = windowRow(message);
  if (window !== null) changes.push({ view: OUTBOX_WINDOWS_VIEW, key: message.id, row: window });
  return changes;
}

/** A waiting-item message's row in its digest window's index, when it is one (state.ts `windowKey`). */
export function windowRow(message: MessageState): DerivedRow | null {
  if (message.recipient.kind !== 'person' || !WAITING_EVENTS.includes(message.event)) return null;
  return { key: message.id, order: digestWindow(message.atMs), open: false, body: { person: message.recipient.name, channel: message.channel } };
}

export function figuresRow(counts: ReadonlyMap<string, number>): DerivedRow {
  const body: { [key: string]: Json } = {};
  for (const [key, count] of [...counts].sort(([a], [b]) => (a < b ? -1 : 1))) if (count !== 0) body[key] = count;
  return { key: FIGURES_KEY, order: 0, open: false, body: { counts: body } };
}

export function figuresOf(row: DerivedRow | null): Map<string, number> {
  const counts = row?.body.counts;
  const found = new Map<string, number>();
  if (counts === null || typeof counts !== 'object' || Array.isArray(counts)) return found;
  for (const [key, count] of Object.entries(counts)) if (typeof count === 'number') found.set(key, count);
  return found;
}
