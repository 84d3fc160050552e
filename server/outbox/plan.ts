import { canonical } from '../../shared/receipts/canonical.ts';
import type { JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { sha256Hex } from '../journal/hash.ts';
import { DIGEST_WINDOW_MS, digestWindow, type ItemContext, type MessageState, WAITING_EVENTS } from './state.ts';
import type { ChannelConfig, DigestItem, MessageContent, MessageEvent, NotificationsConfig, Recipient } from './types.ts';

// What the outbox owes, decided from the journal alone (pure functions: no I/O, no clock but the
// one passed in). The same state always owes the same messages under the same ids, so deciding
// again after a crash or in a second process finds them already journaled.

/** A message the outbox owes, before it is journaled. */
export interface OwedMessage {
  id: string;
  event: MessageEvent;
  about: string | null;
  level: number | null;
  recipient: Recipient;
  /** Which of the recipient's channels: `${kind}:${index in the config}`. */
  channel: string;
  content: MessageContent;
  held: string | null;
}

/** Items a person may be told about one by one in a window; beyond it they wait for the window's digest. */
export const DIGEST_ITEMS_MAX = 5;

/**
 * A message's id: `m` and the first 23 hex characters of SHA-256 over the canonical JSON of what it
 * is (the item, the event, the level, the recipient, the channel, and for a digest the messages it
 * carries): a shape no effect id has, so a message never lands on a refund's chain.
 */
export function messageId(key: { about: string | null; event: string; level: number | null; recipient: Recipient; channel: string; covers?: string[] }): string {
  // Told once per level: first routed there or moved up there is the same news (a re-show at that
  // level tells nobody again); a reminder and a missed deadline are news of their own.
  const told = key.event === 'moved_up' ? { ...key, event: 'escalated' } : key;
  return `m${sha256Hex(canonical({ outbox: told })).slice(0, limits.messageIdHexChars)}`;
}

/** The channels of a recipient, keyed as a message names them. */
export function channelsOf(config: NotificationsConfig, recipient: Recipient): [string, ChannelConfig][] {
  const list = recipient.kind === 'person' ? config.people[recipient.name] : recipient.kind === 'group' ? config.groups[recipient.name] : undefined;
  return (list ?? []).map((channel, index) => [`${channel.kind}:${index}`, channel]);
}

/** What the planner needs to know besides the item. */
export interface PlanInput {
  config: NotificationsConfig;
  /** The application clock now. */
  nowMs: number;
  /** True when a message with this id is already journaled. */
  exists: (id: string) => boolean;
  /** How many waiting-item messages a person's channel was sent (or held) in a digest window. */
  sentInWindow: (person: string, channel: string, window: number) => number;
}

/** The link to an item's page, when the config names the inbox's public address. */
export function itemLink(config: NotificationsConfig, effectId: string): string | null {
  return config.publicUrl === null ? null : `${config.publicUrl.replace(/\/+$/, '')}/items/${effectId}`;
}

/** The event an item's newest escalation is for a person: first routed, moved up a level, or past its deadline at the top. */
export function escalationEvent(escalation: NonNullable<ItemContext['escalation']>): MessageEvent {
  if (!escalation.breach) return 'escalated';
  return escalation.previousLevel !== null && escalation.level > escalation.previousLevel ? 'moved_up' : 'breach';
}

/** True while an item waits for a person: escalated, not decided, not final. */
export function isWaiting(item: ItemContext): boolean {
  return item.escalation !== null && !item.decided && item.final === null;
}

/** Why an item no longer waits at `level`, the level a message about it tells of; null while it does. */
function movedOn(about: string | null, level: number | null, items: ReadonlyMap<string, ItemContext>): string | null {
  const item = about === null ? undefined : items.get(about);
  // An item the outbox knows nothing of cannot be said to have moved on.
  if (item === undefined || item.escalation === null) return null;
  if (item.decided) return 'no longer sent: the item was decided';
  if (item.final !== null) return 'no longer sent: the item is final';
  if (item.escalation.level !== level) return `no longer sent: the item moved on to level ${item.escalation.level} (${item.escalation.group})`;
  return null;
}

/**
 * Why a message to people is no longer worth an attempt, or null while it is: a message about an
 * item stops once the item is decided, is final, or waits at another level than the one it tells
 * of (when it comes back to that level it is news again); a digest once none of the messages it
 * carries would still go. An agent's callback always goes: the final status it carries stays true.
 */
export function noLongerNews(message: Pick<MessageState, 'recipient' | 'about' | 'level' | 'content'>, outbox: { items: ReadonlyMap<string, ItemContext>; messages: ReadonlyMap<string, MessageState> }): string | null {
  if (message.recipient.kind === 'agent') return null;
  if (message.about !== null) return movedOn(message.about, message.level, outbox.items);
  const covers = message.content.covers ?? [];
  if (covers.length === 0) return null;
  const stillNews = covers.some((id) => {
    const held = outbox.messages.get(id);
    return held === undefined || movedOn(held.about, held.level, outbox.items) === null;
  });
  return stillNews ? null : 'no longer sent: every item it lists was decided or moved on';
}

function itemContent(config: NotificationsConfig, item: ItemContext, event: MessageEvent): MessageContent {
  const request = item.request ?? {};
  const escalation = item.escalation;
  return {
    event,
    effect_id: item.effectId,
    request_id: typeof request.id === 'string' ? request.id : null,
    agent: typeof request.agent === 'string' ? request.agent : null,
    amount: typeof request.amount === 'number' ? request.amount : null,
    currency: item.currency,
    why: escalation?.why ?? '',
    reason: typeof request.reason === 'string' ? request.reason : null,
    group: escalation?.group ?? null,
    level: escalation?.level ?? null,
    due_ms: escalation?.due_ms ?? null,
    link: itemLink(config, item.effectId),
  };
}

/**
 * The messages a waiting item owes for `event` at its current level: one per channel of each
 * member routed to, and one per team channel of the group. At most one per person (and channel)
 * per item per level and event, by the id; a person told about more than DIGEST_ITEMS_MAX items in
 * one window has the rest held for the window's digest.
 */
export function owedForEscalation(item: ItemContext, event: MessageEvent, input: PlanInput): OwedMessage[] {
  const escalation = item.escalation;
  if (escalation === null || !isWaiting(item)) return [];
  const owed: OwedMessage[] = [];
  const content = itemContent(input.config, item, event);
  const window = digestWindow(input.nowMs);
  const heldCount = new Map<string, number>();
  const recipients: Recipient[] = [
    ...escalation.routed_to.map((name): Recipient => ({ kind: 'person', name })),
    { kind: 'group', name: escalation.group },
  ];
  for (const recipient of recipients) {
    for (const [channel] of channelsOf(input.config, recipient)) {
      const key = { about: item.effectId, event, level: escalation.level, recipient, channel };
      const id = messageId(key);
      if (input.exists(id)) continue;
      let held: string | null = null;
      if (recipient.kind === 'person' && WAITING_EVENTS.includes(event)) {
        const counted = `${recipient.name}|${channel}`;
        const already = input.sentInWindow(recipient.name, channel, window) + (heldCount.get(counted) ?? 0);
        if (already >= DIGEST_ITEMS_MAX) held = `digest:${window}`;
        heldCount.set(counted, (heldCount.get(counted) ?? 0) + 1);
      }
      owed.push({ id, ...key, content, held });
    }
  }
  return owed;
}

/** The reminder a waiting item owes once `reminderAtShare` of its SLA has passed and its deadline has not. */
export function owedReminders(item: ItemContext, input: PlanInput): OwedMessage[] {
  const share = input.config.reminderAtShare;
  const escalation = item.escalation;
  if (share === null || escalation === null || escalation.due_ms === null || !isWaiting(item)) return [];
  const remindAtMs = escalation.at_ms + Math.floor(share * (escalation.due_ms - escalation.at_ms));
  if (input.nowMs < remindAtMs || input.nowMs >= escalation.due_ms) return [];
  return owedForEscalation(item, 'reminder', input);
}

/** The digests owed for windows that have closed: one per person and channel, listing the items held for it. */
export function owedDigests(held: readonly MessageState[], input: PlanInput): OwedMessage[] {
  // Held messages no digest carries yet, whose window has closed, by person and channel: a
  // message held just as its window closed goes in the next digest rather than being lost.
  const byDigest = new Map<string, MessageState[]>();
  for (const message of held) {
    if (message.held === null || message.recipient.kind !== 'person') continue;
    const window = Number(message.held.slice('digest:'.length));
    if (input.nowMs < (window + 1) * DIGEST_WINDOW_MS) continue;
    const key = `${message.recipient.name}|${message.channel}`;
    byDigest.set(key, [...(byDigest.get(key) ?? []), message]);
  }
  const owed: OwedMessage[] = [];
  for (const messages of byDigest.values()) {
    const first = messages[0]!;
    const covers = messages.map((m) => m.id).sort();
    const window = Math.max(...messages.map((m) => Number(m.held!.slice('digest:'.length))));
    const recipient: Recipient = { kind: 'person', name: first.recipient.name };
    const key = { about: null, event: 'digest' as const, level: window, recipient, channel: first.channel, covers };
    const id = messageId(key);
    if (input.exists(id)) continue;
    const items: DigestItem[] = messages.map((m) => ({
      effect_id: m.content.effect_id ?? '',
      request_id: m.content.request_id ?? '',
      amount: m.content.amount ?? 0,
      currency: m.content.currency ?? 'usd',
      why: m.content.why,
      due_ms: m.content.due_ms,
      link: m.content.link,
    }));
    const content: MessageContent = {
      event: 'digest',
      effect_id: null,
      request_id: null,
      agent: null,
      amount: null,
      currency: null,
      why: `${items.length} more ${items.length === 1 ? 'item waits' : 'items wait'} for you`,
      reason: null,
      group: null,
      level: null,
      due_ms: null,
      link: input.config.publicUrl,
      items,
      covers,
    };
    owed.push({ id, about: null, event: 'digest', level: window, recipient, channel: first.channel, content, held: null });
  }
  return owed;
}

/**
 * The callback an agent is owed when its request reached a final status (or its committed refund
 * later failed at Stripe), within the delivery window: a request made final long before callbacks
 * were configured is not announced now. `body` is the answer GET /v1/refunds/:id gives.
 */
export function owedCallback(item: ItemContext, event: 'final' | 'failed_at_stripe', body: JsonObject, input: PlanInput & { wallMs: number }): OwedMessage[] {
  const agent = typeof item.request?.agent === 'string' ? item.request.agent : null;
  const at = event === 'final' ? item.final?.tsMs : item.failedAtStripe?.tsMs;
  if (agent === null || at === undefined || input.config.agents[agent] === undefined) return [];
  if (input.wallMs - at > limits.outboxDeliveryWindowMs) return [];
  const recipient: Recipient = { kind: 'agent', name: agent };
  const key = { about: item.effectId, event, level: null, recipient, channel: 'callback:0' };
  const id = messageId(key);
  if (input.exists(id)) return [];
  const content: MessageContent = {
    ...itemContent(input.config, item, event),
    why: typeof body.why === 'string' ? body.why : '',
    group: null,
    level: null,
    due_ms: null,
    body,
  };
  return [{ id, ...key, content, held: null }];
}
