import { type Entry, type EntryKind, type FieldsOf, MESSAGE_KINDS, type MessageEntry } from '../../shared/entries.ts';
import { jsonEqual, type Json } from '../../shared/json.ts';
import { canonical } from '../../server/journal/hash.ts';
import type { AppendIfResult, ChainCheck } from '../../server/journal/store.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import { channelsOf, messageId } from '../../server/outbox/plan.ts';
import type { OutboxProjection } from '../../server/outbox/projection.ts';
import type { OutboxView } from '../../server/outbox/view.ts';
import type { Delivery, MessageContent, Recipient } from '../../server/outbox/types.ts';
import { Views } from '../../server/views/views.ts';
import type { Received } from './outbox-channels.ts';
import { ProcessJournal } from './sim-journal.ts';
import { CONFIG, type World } from './world.ts';

// The outbox's invariants, checked at the end of a seed once every retry has come due (the
// drain): (a) every message decided is delivered or given up, or carried by a digest that is;
// (b) no message is delivered for an event that did not happen, or before it was journaled;
// (c) a message reaches its receiver once, again only after a send its sender never recorded (a
// crash, a lost answer); (d) message chains are chains of their own, never in an item's chain,
// under the id their key hashes to. And, checked while the run settles: (e) nothing owed is
// left undecided by the live server.

const MESSAGE_KIND_SET: ReadonlySet<string> = new Set(MESSAGE_KINDS);

/** The key a message's id is the hash of. */
function keyOf(message: MessageEntry) {
  const recipient = message.recipient as Recipient;
  const covers = Array.isArray(message.content.covers) ? { covers: message.content.covers.filter((id): id is string => typeof id === 'string') } : {};
  return { about: message.about, event: message.event, level: message.level, recipient, channel: message.channel, ...covers };
}

function describeMessage(message: MessageEntry): string {
  return `${message.effect_id} (${message.event}${message.about ? ` of ${message.about}` : ''}${message.level === null ? '' : ` at level ${message.level}`} to ${message.recipient.kind} ${message.recipient.name} over ${message.channel})`;
}

/** Check (a), (b), (c) and (d) over the settled journal's chains and what the receivers took. */
export function checkOutbox(world: World, chains: ReadonlyMap<string, Entry[]>): void {
  const messages = checkChains(world, chains);
  checkSettled(world, chains, messages);
  for (const received of world.receivers.received) checkDelivery(world, chains, received);
  checkOnce(world, messages);
}

/** (d) Every chain is an item's or a message's, never both; a message chain is its MESSAGE, its numbered attempts, and at most one GAVE_UP. */
function checkChains(world: World, chains: ReadonlyMap<string, Entry[]>): Map<string, MessageEntry> {
  const messages = new Map<string, MessageEntry>();
  const byKey = new Map<string, string>();
  for (const [id, chain] of chains) {
    const first = chain[0]!;
    if (first.kind !== 'MESSAGE') {
      const stray = chain.find((entry) => MESSAGE_KIND_SET.has(entry.kind));
      if (stray) world.violation(`message chains never appear in an item's chain: ${id} (a ${first.kind} chain) holds a ${stray.kind}`);
      continue;
    }
    messages.set(id, first);
    world.hit('outbox.message');
    // A digest's id may also name what it carries; every other message's is the hash of its key alone.
    if (first.event !== 'digest') {
      if (messageId(keyOf(first)) !== id) world.violation(`a message's id is the hash of what it is: ${describeMessage(first)} is journaled under another id`);
      const key = canonical(keyOf(first) as unknown as Json);
      const twin = byKey.get(key);
      if (twin !== undefined) world.violation(`a message is decided once: ${describeMessage(first)} repeats ${twin}`);
      byKey.set(key, id);
    }
    if (first.about !== null && (chains.get(first.about)?.[0]?.kind ?? 'MESSAGE') === 'MESSAGE') world.violation(`a message is about an item: ${describeMessage(first)} is about no item chain`);
    let n = 0;
    let done = false;
    for (const entry of chain.slice(1)) {
      if (done) world.violation(`nothing follows a delivery or a give-up: ${describeMessage(first)} has a ${entry.kind} after one`);
      if (entry.kind === 'ATTEMPT') {
        n += 1;
        if (entry.n !== n) world.violation(`attempts are numbered in order: ${describeMessage(first)} has attempt ${entry.n} where ${n} was next`);
        done = entry.outcome === 'delivered';
      } else if (entry.kind === 'GAVE_UP') {
        done = true;
        if (entry.attempts !== n) world.violation(`a give-up counts the attempts made: ${describeMessage(first)} was given up after ${n} attempts, saying ${entry.attempts}`);
      }
      else world.violation(`message chains hold only the outbox's entries: ${describeMessage(first)} holds a ${entry.kind}`);
    }
  }
  return messages;
}

/** Where a message chain ended: delivered, given up, or neither. */
function outcomeOf(chain: readonly Entry[]): 'delivered' | 'gave_up' | null {
  if (chain.some((e) => e.kind === 'ATTEMPT' && e.outcome === 'delivered')) return 'delivered';
  return chain.some((e) => e.kind === 'GAVE_UP') ? 'gave_up' : null;
}

/**
 * The digests that carry a held message: to its person, over its channel, naming it in `covers`
 * and listing its item. A digest may carry messages held in earlier windows too (one held just as
 * its window closed goes in the next digest), so the window is not compared: `covers` says it.
 */
function digestsOf(message: MessageEntry, messages: ReadonlyMap<string, MessageEntry>): MessageEntry[] {
  return [...messages.values()].filter((d) => {
    const content = d.content as unknown as MessageContent;
    return (
      d.event === 'digest' &&
      d.recipient.name === message.recipient.name &&
      d.channel === message.channel &&
      (content.covers ?? []).includes(message.effect_id) &&
      (content.items ?? []).some((item) => item.effect_id === message.about)
    );
  });
}

/** (a) After the drain, every message decided was delivered or given up, itself or by the digest that carries it. */
function checkSettled(world: World, chains: ReadonlyMap<string, Entry[]>, messages: ReadonlyMap<string, MessageEntry>): void {
  for (const [id, message] of messages) {
    const chain = chains.get(id)!;
    if (chain.some((e) => e.kind === 'ATTEMPT' && e.outcome === 'failed') && outcomeOf(chain) === 'delivered') world.hit('outbox.delivered_after_retry');
    if (message.held === null) {
      const outcome = outcomeOf(chain);
      world.hit(`outbox.settled.${outcome ?? 'owed'}`);
      if (outcome === null) world.violation(`every message decided is delivered or given up: ${describeMessage(message)} is left after ${chain.length - 1} attempts`);
      continue;
    }
    world.hit('outbox.settled.held');
    const digests = digestsOf(message, messages);
    if (digests.length === 0) {
      world.violation(`every message held for a digest is carried by one: ${describeMessage(message)} is in no digest`);
    } else if (!digests.some((digest) => outcomeOf(chains.get(digest.effect_id)!) !== null)) {
      world.violation(`every message decided is delivered or given up: ${describeMessage(message)} waits in digest ${digests.map((d) => d.effect_id).join(', ')}, neither delivered nor given up`);
    }
  }
}

/** The channel a message names, as the config holds it (a callback for an agent). */
function channelOf(message: MessageEntry): Delivery['channel'] | undefined {
  const { kind, name } = message.recipient;
  if (kind === 'agent') {
    const callback = CONFIG.notifications.agents[name];
    return callback ? { kind: 'callback', ...callback } : undefined;
  }
  if (kind !== 'person' && kind !== 'group') return undefined;
  return channelsOf(CONFIG.notifications, { kind, name } as Recipient).find(([key]) => key === message.channel)?.[1];
}

/** Why an event is not borne out by an item's chain as it was when the message arrived; null when it is. */
function unfounded(message: MessageEntry, content: MessageContent, chain: readonly Entry[] | undefined): string | null {
  if (chain === undefined || chain.length === 0) return 'its item has no chain';
  switch (content.event) {
    case 'escalated':
    case 'moved_up':
    case 'breach':
    case 'reminder': {
      const wantBreach = content.event === 'escalated' ? false : content.event === 'reminder' ? null : true;
      const at = chain.filter((e) => e.kind === 'ESCALATED' && e.level === content.level && (wantBreach === null || e.breach === wantBreach));
      if (at.length === 0) return `its item has no ESCALATED at level ${content.level}${wantBreach ? ' past its deadline' : ''}`;
      const { kind, name } = message.recipient;
      const told = at.some((e) => e.kind === 'ESCALATED' && (kind === 'person' ? e.routed_to.includes(name) : kind === 'group' && e.group === name));
      return told ? null : `${kind} ${name} was not routed to at level ${content.level}`;
    }
    case 'final':
      return chain.some((e) => e.kind === 'COMMITTED' || e.kind === 'AMBIGUOUS' || (e.kind === 'DECIDED' && e.decision !== 'approve')) ? null : 'its item was not final';
    case 'failed_at_stripe':
      return chain.some((e) => e.kind === 'CONFIRMED' && (e.status === 'failed' || e.status === 'canceled')) ? null : 'Stripe had not reported the refund failed';
    case 'digest':
      return chain.some((e) => e.kind === 'ESCALATED') ? null : 'an item it lists was never escalated';
    default:
      return `${String(content.event)} is no event`;
  }
}

/** (b) A delivery follows its durable MESSAGE, says what it says, goes where it names, and tells of something that happened. */
function checkDelivery(world: World, chains: ReadonlyMap<string, Entry[]>, received: Received): void {
  const { delivery } = received;
  const first = received.messageEntries > 0 ? chains.get(delivery.id)?.[0] : undefined;
  const message = first?.kind === 'MESSAGE' ? first : null;
  const where = `step ${received.step}, message ${delivery.id}`;
  world.hit('outbox.delivered');
  world.hit(`outbox.delivered.${delivery.content.event}`);
  if (message === null) {
    world.violation(`no message is delivered before it is journaled: ${where} (${delivery.content.event}) reached ${delivery.recipient.name} with no MESSAGE`);
    return;
  }
  if (!jsonEqual(delivery.content as unknown as Json, message.content)) world.violation(`a delivery says what its MESSAGE says: ${where} differs from ${describeMessage(message)}`);
  if (!jsonEqual(delivery.recipient, message.recipient) || !jsonEqual(delivery.channel as unknown as Json, (channelOf(message) ?? null) as unknown as Json)) {
    world.violation(`a delivery goes where its MESSAGE names: ${where} went to ${delivery.recipient.kind} ${delivery.recipient.name} over ${delivery.channel.kind}, not ${describeMessage(message)}`);
  }
  const content = delivery.content;
  const about = content.event === 'digest' ? (content.items ?? []).map((item) => item.effect_id) : [content.effect_id ?? ''];
  for (const effectId of about) {
    const problem = unfounded(message, content, chains.get(effectId)?.slice(0, received.itemEntries.get(effectId) ?? 0));
    if (problem !== null) world.violation(`no message is delivered for an event that did not happen: ${describeMessage(message)} arrived at step ${received.step} when ${problem} (${effectId})`);
  }
}

/** (c) A message reaches its receiver once, and once more for every send of it its sender never recorded; one event is told under one id. */
function checkOnce(world: World, messages: ReadonlyMap<string, MessageEntry>): void {
  const { received, unrecorded } = world.receivers;
  const byId = new Map<string, number>();
  for (const r of received) byId.set(r.delivery.id, (byId.get(r.delivery.id) ?? 0) + 1);
  const byKey = new Map<string, { count: number; allowed: number; ids: string[] }>();
  for (const [id, count] of byId) {
    const excused = unrecorded.get(id) ?? 0;
    const message = messages.get(id);
    const what = message ? describeMessage(message) : id;
    if (count >= 2) world.hit('outbox.delivered_twice');
    if (count > 1 + excused) {
      world.violation(`a message is delivered at most twice, twice only when a crash or a lost answer came between its send and its record: ${what} was delivered ${count} times, ${excused} of its sends unrecorded`);
    }
    if (!message || message.event === 'digest') continue;
    const key = canonical(keyOf(message) as unknown as Json);
    const told = byKey.get(key) ?? { count: 0, allowed: 1, ids: [] };
    told.count += count;
    told.allowed += excused;
    told.ids.push(id);
    byKey.set(key, told);
  }
  for (const told of byKey.values()) {
    if (told.ids.length > 1 && told.count > told.allowed) {
      const message = messages.get(told.ids[0]!)!;
      world.violation(`a message is delivered at most twice: ${describeMessage(message)} reached its receiver ${told.count} times under ${told.ids.length} ids (${told.ids.join(', ')}), which no receiver can drop as repeats`);
    }
  }
}

/** The shared journal, read as it is, where a MESSAGE appended is only noted: what a rebuilt outbox would decide. */
class DryJournal extends ProcessJournal {
  readonly owed: MessageEntry[] = [];

  override async appendIf<K extends EntryKind>(kind: K, effectId: string, _check: ChainCheck, fields: FieldsOf<K>): Promise<AppendIfResult<K>> {
    if (kind === 'MESSAGE') this.owed.push({ kind: 'MESSAGE', effect_id: effectId, ...(fields as unknown as FieldsOf<'MESSAGE'>) } as MessageEntry);
    return { entry: null, blocker: 'dry run' };
  }
}

/**
 * (e) Nothing owed is left undecided: the live server's outbox plans and ticks, and at that very
 * instant an outbox rebuilt from the whole journal finds nothing more owed. Its writes go nowhere.
 */
export async function checkNothingUnplanned(world: World): Promise<void> {
  const p = world.process;
  await world.guarded('an outbox plan', () => p.outbox.plan());
  await world.guarded('an outbox tick', () => p.outbox.tick());
  const dry = new DryJournal(world.journal, { dead: false, maybeCrash: () => {}, note: () => {} });
  const views = new Views({ journal: dry, inboxName: CONFIG.inboxName, nowMs: () => world.clock.wallMs, log: { fatal: () => {}, error: () => {} } });
  const fresh = new Outbox({
    journal: dry,
    current: async () => (await views.current()).outbox,
    notifications: CONFIG.notifications,
    channels: { deliver: async () => ({ ok: false, status: null, error: 'a dry run sends nothing', retryable: false }) },
    nowMs: () => world.clock.wallMs,
    wallMs: () => world.clock.wallMs,
    owner: 'sim-dry-run',
    log: { warn: () => {}, error: (_fields, message) => world.violation(`a rebuilt outbox failed: ${message}`) },
  });
  await fresh.plan();
  await fresh.tick();
  world.hit('check.outbox_planned');
  for (const message of dry.owed) world.violation(`nothing owed is left undecided: the live outbox never decided ${describeMessage(message)}`);
}

/**
 * What the outbox shows, as comparable text: every message and every item's context (the live
 * views' read from their derived tables, a projection's from memory), as canonical JSON.
 */
export async function outboxViews(projection: OutboxProjection | OutboxView): Promise<Record<string, string>> {
  const live = 'history' in projection;
  const byId = <T extends object>(values: T[], id: (value: T) => string) => values.sort((a, b) => (id(a) < id(b) ? -1 : 1)).map((value) => JSON.parse(JSON.stringify(value)) as T);
  const views = {
    messages: byId(live ? await projection.history.allMessages() : [...projection.messages.values()], (m) => m.id),
    items: byId(live ? await projection.history.allItems() : [...projection.items.values()], (i) => i.effectId),
    held: projection.held().map((m) => m.id).sort(),
    undelivered: projection.undelivered().map((m) => m.id).sort(),
  };
  return Object.fromEntries(Object.entries(views).map(([name, view]) => [name, canonical(view)]));
}
