import type { Entry, MessageEntry } from '../../shared/entries.ts';
import { limits } from '../../shared/limits.ts';
import type { KillHook } from '../gate/kill-points.ts';
import { refundAnswer } from '../refunds/answers.ts';
import type { JournalStore } from '../journal/store.ts';
import { channelsOf, escalationEvent, isWaiting, noLongerNews, type OwedMessage, owedCallback, owedDigests, owedForEscalation, owedReminders, type PlanInput } from './plan.ts';
import { digestWindow, type ItemContext, readContent, WAITING_EVENTS } from './state.ts';
import type { OutboxView } from './view.ts';
import type { Channels, Delivery, DeliveryOutcome, NotificationsConfig } from './types.ts';

/** What the outbox logs: pino's `(fields, message)`. */
export interface OutboxLog {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface OutboxOptions {
  journal: JournalStore;
  /** The outbox projection, caught up with the journal first (the views own it). */
  current: () => Promise<OutboxView>;
  notifications: NotificationsConfig;
  channels: Channels;
  /** The application clock: SLAs, reminders, digest windows. */
  nowMs: () => number;
  /** The wall clock: attempts, retries, the 24 h window. */
  wallMs: () => number;
  /** Who claims a message while attempting it, unique per process. */
  owner: string;
  killHook?: KillHook;
  log: OutboxLog;
  /** How long a process holds a message while it attempts it (default: six attempt timeouts). */
  claimTtlMs?: number;
  /** A person's display name, for the decision a callback reports (default: the name). */
  displayName?: (name: string) => string;
  /** For the retry jitter; tests make it fixed. */
  random?: () => number;
}

/** The wait before attempt `n + 1` after attempt `n` failed: 5 s doubling to at most 1 h, with ±20 % jitter. */
export function retryDelayMs(n: number, random: () => number = Math.random): number {
  const base = Math.min(limits.outboxBackoffFirstMs * 2 ** (n - 1), limits.outboxBackoffMaxMs);
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** How long a process holds a message while it attempts it: well past one attempt's timeout. */
const CLAIM_TTL_MS = limits.outboxAttemptTimeoutMs * 6;

/** Items planned between two yields to the event loop: a pass over many never holds requests up. */
const PLAN_YIELD_EVERY = 100;

/**
 * The wall-clock time after which a message gets no more attempts: for an agent's callback 24 h
 * after its first attempt; for a message to a person, and for any message before its first
 * attempt, 24 h after it was decided. (A person's message also stops after its 8th attempt.)
 */
function deadlineMs(message: MessageEntry, firstAttemptAtMs: number | null): number {
  if (message.recipient.kind === 'agent' && firstAttemptAtMs !== null) return firstAttemptAtMs + limits.outboxCallbackRetryMs;
  return message.ts_ms + limits.outboxDeliveryWindowMs;
}

/** Where a message chain stands, read from the journal itself (another process may have moved it). */
function chainState(chain: readonly Entry[]) {
  let attempts = 0;
  let done = false;
  let nextAtMs: number | null = null;
  let firstAttemptAtMs: number | null = null;
  /** The error of a failed attempt that was the last, while its GAVE_UP is not journaled (a crash between the two appends). */
  let lastError: string | null = null;
  for (const entry of chain) {
    if (entry.kind === 'MESSAGE') nextAtMs = entry.held === null ? entry.ts_ms : null;
    if (entry.kind === 'ATTEMPT') {
      attempts = Math.max(attempts, entry.n);
      firstAttemptAtMs ??= entry.at_ms;
      if (entry.outcome === 'delivered') done = true;
      nextAtMs = entry.next_at_ms;
      lastError = entry.outcome === 'failed' && entry.next_at_ms === null ? entry.detail : null;
    }
    if (entry.kind === 'GAVE_UP') done = true;
  }
  return { message: chain[0]?.kind === 'MESSAGE' ? chain[0] : null, attempts, done, nextAtMs, firstAttemptAtMs, lastError: done ? null : lastError };
}

/**
 * The outbox: decides the messages owed (from the journal alone, under deterministic ids),
 * journals each before its first attempt in a chain of its own, and delivers them with retries,
 * journaling every attempt. It runs beside the gate and the inbox, never in their way: a slow or
 * failing receiver delays only its own message. A crash between a send and its record repeats
 * that one message, with the same `Interlock-Message-Id`, so the receiver can drop it.
 */
export class Outbox {
  readonly #options: OutboxOptions;
  readonly #random: () => number;
  #running = new Set<string>();
  /** Waiting-item messages journaled in this pass, by person, channel and window: the projection sees them at the next catch-up. */
  #journaledInWindow = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;
  /** Attempts running per recipient (`kind:name`). */
  readonly #perRecipient = new Map<string, number>();
  #pass: Promise<void> | null = null;
  #again = false;
  /** The agents with a callback at the last planning pass (null before the first). */
  #agents: ReadonlySet<string> | null = null;

  constructor(options: OutboxOptions) {
    this.#options = options;
    this.#random = options.random ?? Math.random;
  }

  /**
   * Journal every message owed by the items that changed since the last pass; returns how many.
   * A pass that fails part way hands the items it did not plan back to the view, so the next pass
   * plans them (a message already journaled is not journaled twice).
   */
  async plan(): Promise<number> {
    const outbox = await this.#options.current();
    await outbox.prepareWindow(digestWindow(this.#options.nowMs()));
    this.#journaledInWindow.clear();
    const agents = Object.keys(this.#options.notifications.agents);
    const callbacks = agents.length > 0;
    // A reload gave an agent a callback: the day's final items may owe it one, as after a start.
    if (this.#agents !== null && agents.some((agent) => !this.#agents!.has(agent))) outbox.replanFinals();
    this.#agents = new Set(agents);
    const taken = outbox.takeTouched();
    let touched: string[];
    try {
      touched = [...new Set([...taken, ...(await outbox.takeFinals(callbacks))])];
    } catch (error) {
      outbox.retouch(taken);
      throw error;
    }
    let written = 0;
    let planned = 0;
    try {
      for (const effectId of touched) {
        // An item not in memory is closed: it can owe an agent's callback, nothing else.
        if (callbacks || outbox.items.has(effectId)) {
          const item = await outbox.item(effectId);
          if (item) written += await this.#journal(await this.#owedBy(item, outbox));
        }
        // A long pass (a start re-plans the day's final items) lets requests and signals in between.
        if (++planned % PLAN_YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      outbox.retouch(touched.slice(planned));
      throw error;
    }
    return written;
  }

  /** The SLA's messages: reminders at their share of the SLA, and digests of windows that closed. */
  async tick(): Promise<number> {
    const outbox = await this.#options.current();
    await outbox.prepareWindow(digestWindow(this.#options.nowMs()));
    const input = this.#input(outbox);
    let owed: OwedMessage[] = owedDigests(outbox.held(), input);
    for (const item of outbox.items.values()) if (isWaiting(item)) owed = owed.concat(owedReminders(item, input));
    return this.#journal(owed);
  }

  /**
   * Start an attempt for every message whose time has come, as slots allow: at most
   * `outboxConcurrency` at once, and at most `outboxPerRecipientMax` for one recipient, so a
   * receiver that hangs holds its own slots and nobody else's. Each attempt that ends starts the
   * next one due at once. Resolves when the attempts it started have ended; returns how many ran.
   */
  async deliverDue(): Promise<number> {
    const outbox = await this.#options.current();
    const started: Promise<boolean>[] = [];
    for (const message of outbox.due(this.#options.wallMs())) {
      if (this.#running.size >= limits.outboxConcurrency) break;
      const who = `${message.recipient.kind}:${message.recipient.name}`;
      if (this.#running.has(message.id) || (this.#perRecipient.get(who) ?? 0) >= limits.outboxPerRecipientMax) continue;
      this.#perRecipient.set(who, (this.#perRecipient.get(who) ?? 0) + 1);
      started.push(
        this.#attempt(message.id).then(
          async (ran) => {
            this.#perRecipient.set(who, (this.#perRecipient.get(who) ?? 1) - 1);
            // A slot is free: the next message due goes now, not at the next pass. Only after an
            // attempt that ran (it moved its message on); one another process holds waits for a pass.
            if (ran && !this.#stopped) await this.deliverDue();
            return ran;
          },
          (error: unknown) => {
            this.#perRecipient.set(who, (this.#perRecipient.get(who) ?? 1) - 1);
            throw error;
          },
        ),
      );
    }
    return (await Promise.all(started)).filter(Boolean).length;
  }

  /**
   * Decide what is owed and start what is due. Planning passes asked for while one runs coalesce
   * into one more; deliveries never hold planning up (a hanging receiver must not delay the next
   * escalation's messages). Resolves once this call's planning is done and the attempts it
   * started have ended.
   */
  async kick(): Promise<void> {
    try {
      await this.#planPass();
      await this.deliverDue();
    } catch (error) {
      this.#options.log.error({ err: error }, 'outbox pass failed; the next one tries again');
    }
  }

  #planPass(): Promise<void> {
    if (this.#pass) {
      this.#again = true;
      return this.#pass;
    }
    this.#pass = (async () => {
      try {
        do {
          this.#again = false;
          await this.plan();
        } while (this.#again);
      } finally {
        this.#pass = null;
      }
    })();
    return this.#pass;
  }

  /** Run a pass every `intervalMs` (retries come due with time, not with new entries). */
  start(intervalMs: number): void {
    this.stop();
    this.#stopped = false;
    this.#timer = setInterval(() => void this.kick(), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#stopped = true;
  }

  /** The current planning pass and every attempt running: a test or a shutdown waits for them. */
  async idle(): Promise<void> {
    while (this.#pass || this.#running.size > 0) {
      if (this.#pass) await this.#pass;
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  #input(outbox: OutboxView): PlanInput & { wallMs: number } {
    return {
      config: this.#options.notifications,
      nowMs: this.#options.nowMs(),
      wallMs: this.#options.wallMs(),
      exists: (id) => outbox.exists(id),
      sentInWindow: (person, channel, window) =>
        outbox.sentInWindow(person, channel, window) + (this.#journaledInWindow.get(`${person}|${channel}|${window}`) ?? 0),
    };
  }

  async #owedBy(item: ItemContext, outbox: OutboxView): Promise<OwedMessage[]> {
    const input = this.#input(outbox);
    const owed = item.escalation !== null && isWaiting(item) ? owedForEscalation(item, escalationEvent(item.escalation), input) : [];
    const request = item.request;
    const agent = typeof request?.agent === 'string' ? request.agent : null;
    if (agent === null || this.#options.notifications.agents[agent] === undefined || typeof request?.id !== 'string') return owed;
    // A callback carries the answer GET /v1/refunds/:id gives now, read from the item's chain.
    const events = [...(item.final ? (['final'] as const) : []), ...(item.failedAtStripe ? (['failed_at_stripe'] as const) : [])];
    for (const event of events) {
      // Owed at all (configured, within its window, not journaled yet) before its chain is read.
      if (owedCallback(item, event, {}, input).length === 0) continue;
      const chain = await this.#options.journal.entries(item.effectId);
      const body = refundAnswer(request.id, item.effectId, chain, undefined, this.#options.displayName);
      owed.push(...owedCallback(item, event, body, input));
    }
    return owed;
  }

  /** Journal each owed message once: a second process (or a second pass) finds its chain begun and writes nothing. */
  async #journal(owed: readonly OwedMessage[]): Promise<number> {
    let written = 0;
    for (const message of owed) {
      const fields = {
        at_ms: this.#options.nowMs(),
        event: message.event,
        about: message.about,
        level: message.level,
        recipient: message.recipient,
        channel: message.channel,
        content: message.content,
        held: message.held,
      };
      const result = await this.#options.journal.appendIf('MESSAGE', message.id, (chain) => (chain.length > 0 ? 'decided' : null), fields);
      if (result.blocker !== null) continue;
      written += 1;
      if (message.recipient.kind === 'person' && WAITING_EVENTS.includes(message.event)) {
        const key = `${message.recipient.name}|${message.channel}|${digestWindow(fields.at_ms)}`;
        this.#journaledInWindow.set(key, (this.#journaledInWindow.get(key) ?? 0) + 1);
      }
    }
    return written;
  }

  /** Claim, attempt and record one message; false when another process holds it or nothing is owed. */
  async #attempt(id: string): Promise<boolean> {
    const { journal, owner, log } = this.#options;
    this.#running.add(id);
    try {
      if (!(await journal.claim(id, owner, this.#options.claimTtlMs ?? CLAIM_TTL_MS))) return false;
      try {
        const state = chainState(await journal.entries(id));
        const wallMs = this.#options.wallMs();
        if (!state.message || state.done) return false;
        const message = state.message;
        const n = state.attempts + 1;
        // `attempts`: the attempts made, counting one just recorded. A message ended because it is no
        // longer news is no failure, so it is not logged as one.
        const giveUp = async (reason: string, attempts = state.attempts, failed = true) => {
          await journal.appendIf('GAVE_UP', id, (chain) => (chainState(chain).done ? 'done' : null), { at_ms: this.#options.wallMs(), attempts, reason });
          if (failed) log.warn({ messageId: id, about: message.about, event: message.event, recipient: message.recipient, channel: message.channel, reason }, 'message given up');
        };
        // The last attempt was recorded and the process died before its GAVE_UP: give up now.
        if (state.lastError !== null) {
          await giveUp(`${state.attempts} attempt${state.attempts === 1 ? '' : 's'} failed; the last: ${state.lastError}`);
          return true;
        }
        if (state.nextAtMs === null || state.nextAtMs > wallMs) return false;
        // Judged when the attempt would go, so an item that came back to the message's level is news again.
        const moot = noLongerNews({ recipient: message.recipient, about: message.about, level: message.level, content: readContent(message.content) }, await this.#options.current());
        if (moot !== null) {
          await giveUp(moot, state.attempts, false);
          return true;
        }
        if (wallMs > deadlineMs(message, state.firstAttemptAtMs)) {
          await giveUp(state.attempts === 0 ? 'not delivered within 24 h' : `not delivered within 24 h; ${state.attempts} attempt${state.attempts === 1 ? '' : 's'} failed`);
          return true;
        }
        const delivery = this.#delivery(id, message);
        if (delivery === null) {
          await giveUp(`the ${message.channel} channel of ${message.recipient.kind} ${message.recipient.name} is no longer configured`);
          return true;
        }
        await this.#options.killHook?.('outbox_before_attempt', id);
        const outcome = await this.#deliver(delivery);
        await this.#options.killHook?.('outbox_after_send', id);
        await this.#record(id, n, message, state.firstAttemptAtMs, outcome, giveUp);
        await this.#options.killHook?.('outbox_after_record', id);
        return true;
      } finally {
        await journal.release(id, owner);
      }
    } finally {
      this.#running.delete(id);
    }
  }

  async #deliver(delivery: Delivery): Promise<DeliveryOutcome> {
    try {
      return await this.#options.channels.deliver(delivery, AbortSignal.timeout(limits.outboxAttemptTimeoutMs));
    } catch (error) {
      // A channel never throws; if one does, it is our bug, and the attempt counts as failed.
      this.#options.log.error({ err: error, messageId: delivery.id }, 'a channel threw');
      return { ok: false, status: null, error: 'the channel failed unexpectedly', retryable: true };
    }
  }

  /**
   * Journal attempt `n` and what came of it, with when the next may go: a message to a person gets
   * `outboxPersonAttemptsMax` attempts; an agent's callback is attempted until its deadline, 24 h
   * after its first attempt; a failure no retry can fix is the last at once.
   */
  async #record(
    id: string,
    n: number,
    message: MessageEntry,
    firstAttemptAtMs: number | null,
    outcome: DeliveryOutcome,
    giveUp: (reason: string, attempts: number) => Promise<void>,
  ): Promise<void> {
    const atMs = this.#options.wallMs();
    const unchanged = (chain: readonly Entry[]) => (chainState(chain).attempts !== n - 1 || chainState(chain).done ? 'moved' : null);
    if (outcome.ok) {
      await this.#options.journal.appendIf('ATTEMPT', id, unchanged, { n, at_ms: atMs, outcome: 'delivered', status: outcome.status, detail: outcome.detail, next_at_ms: null });
      return;
    }
    const nextAtMs = atMs + retryDelayMs(n, this.#random);
    const outOfAttempts = message.recipient.kind !== 'agent' && n >= limits.outboxPersonAttemptsMax;
    const last = !outcome.retryable || outOfAttempts || nextAtMs > deadlineMs(message, firstAttemptAtMs ?? atMs);
    const recorded = await this.#options.journal.appendIf('ATTEMPT', id, unchanged, {
      n,
      at_ms: atMs,
      outcome: 'failed',
      status: outcome.status,
      detail: outcome.error,
      next_at_ms: last ? null : nextAtMs,
    });
    if (last && recorded.blocker === null) {
      await giveUp(outcome.retryable ? `${n} attempts failed; the last: ${outcome.error}` : outcome.error, n);
    }
  }

  /** The delivery for a message under the config as it is now; null when its channel is gone. */
  #delivery(id: string, message: MessageEntry): Delivery | null {
    const { notifications } = this.#options;
    const content = readContent(message.content);
    const kind = message.recipient.kind;
    if (kind === 'agent') {
      const callback = notifications.agents[message.recipient.name];
      return callback ? { id, recipient: { kind: 'agent', name: message.recipient.name }, channel: { kind: 'callback', ...callback }, content } : null;
    }
    if (kind !== 'person' && kind !== 'group') return null;
    const recipient = kind === 'person' ? { kind: 'person' as const, name: message.recipient.name } : { kind: 'group' as const, name: message.recipient.name };
    const channel = channelsOf(notifications, recipient).find(([key]) => key === message.channel)?.[1];
    return channel ? { id, recipient, channel, content } : null;
  }
}
