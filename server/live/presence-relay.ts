import type { SignalChannel, Signals } from '../../db/port/signals.ts';
import { SIGNAL_PAYLOAD_BYTES_MAX } from '../../db/port/signals.ts';
import type { Viewer } from '../../shared/api.ts';
import { limits } from '../../shared/limits.ts';

// Presence across the servers on one storage: each server tells the others, on the presence
// channel, who of its own people views an item whenever that changes, and again every announce
// period for each item it has viewers of. What the others told is kept per server and item, and
// forgotten once that server has not told it for three periods (a server killed takes its viewers
// with it, within them). Presence is a courtesy: nothing of it is journaled, and a lost signal
// costs at most a few seconds of a stale "is viewing".

const CHANNEL: SignalChannel = 'interlock_presence';
const effectIdPattern = new RegExp(`^[0-9a-f]{${limits.effectIdHexChars}}$`);

/** How often a server tells the others again who views its items, unless told otherwise. */
export const PRESENCE_ANNOUNCE_MS = 2_000;
/** Periods without a word after which another server's viewers are forgotten. */
export const PRESENCE_PERIODS_KEPT = 3;

/** One server's word on one item: its own viewers of it (none: nobody there views it now). */
export interface PresenceAnnouncement {
  server: string;
  effect_id: string;
  viewers: Viewer[];
}

/** What the relay needs of this server's presence: its own viewers, and a way to tell its sockets an item's viewers changed. */
export interface LocalPresence {
  /** Every item this server's own people view, with them. */
  ownViewed(): Map<string, Viewer[]>;
  /** The viewers of an item changed elsewhere: tell the sockets that may see it. */
  changedElsewhere(effectId: string): void;
}

/** What the relay is given. */
export interface PresenceRelayOptions {
  signals: Pick<Signals, 'publish' | 'subscribe' | 'onReconnect'>;
  /** This server, as the others tell it apart (its lease holder name). */
  server: string;
  /** Monotonic ms (default the performance clock): when each word was heard. */
  nowMs?: () => number;
  announceMs?: number;
}

interface Heard {
  viewers: Viewer[];
  atMs: number;
}

/** Presence told to and heard from the other servers on the storage. */
export class PresenceRelay {
  readonly #options: PresenceRelayOptions;
  readonly #nowMs: () => number;
  readonly #announceMs: number;
  /** By item, by server: what each other server last told of the item. */
  readonly #heard = new Map<string, Map<string, Heard>>();
  #local: LocalPresence | null = null;
  #timer: NodeJS.Timeout | null = null;
  #stops: Array<() => void> = [];

  constructor(options: PresenceRelayOptions) {
    this.#options = options;
    this.#nowMs = options.nowMs ?? (() => performance.now());
    this.#announceMs = options.announceMs ?? PRESENCE_ANNOUNCE_MS;
  }

  /** Hear the others, and tell them this server's viewers every period, until `stop`. */
  async start(local: LocalPresence): Promise<void> {
    this.#local = local;
    this.#stops.push(await this.#options.signals.subscribe(CHANNEL, (payload) => this.#hear(payload)));
    // Words sent while this server's listening connection was down were lost: tell ours again now.
    this.#stops.push(this.#options.signals.onReconnect(() => this.#announceAll()));
    this.#timer = setInterval(() => {
      this.#forgetSilent();
      this.#announceAll();
    }, this.#announceMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    for (const stop of this.#stops.splice(0)) stop();
    this.#local = null;
  }

  /** The viewers of an item on the other servers, as they last told it. */
  viewersElsewhere(effectId: string): Viewer[] {
    return [...(this.#heard.get(effectId)?.values() ?? [])].flatMap((heard) => heard.viewers);
  }

  /** The items someone on another server views. */
  viewedElsewhere(): string[] {
    return [...this.#heard.keys()];
  }

  /** This server's viewers of an item changed: tell the others now. */
  announce(effectId: string, viewers: Viewer[]): void {
    const payload = payloadOf({ server: this.#options.server, effect_id: effectId, viewers });
    // A word not told is told again within a period; the others keep the last one meanwhile.
    this.#options.signals.publish(CHANNEL, payload).catch(() => {});
  }

  #announceAll(): void {
    for (const [effectId, viewers] of this.#local?.ownViewed() ?? []) this.announce(effectId, viewers);
  }

  #hear(payload: string): void {
    const said = readAnnouncement(payload);
    if (said === null || said.server === this.#options.server) return;
    let byServer = this.#heard.get(said.effect_id);
    const before = byServer?.get(said.server)?.viewers ?? [];
    if (said.viewers.length === 0) byServer?.delete(said.server);
    else {
      if (byServer === undefined) {
        byServer = new Map();
        this.#heard.set(said.effect_id, byServer);
      }
      byServer.set(said.server, { viewers: said.viewers, atMs: this.#nowMs() });
    }
    if (byServer?.size === 0) this.#heard.delete(said.effect_id);
    if (!sameViewers(before, said.viewers)) this.#local?.changedElsewhere(said.effect_id);
  }

  /** Forget what a server has not told again for PRESENCE_PERIODS_KEPT periods; tell the sockets of items that changed. */
  #forgetSilent(): void {
    const oldestMs = this.#nowMs() - PRESENCE_PERIODS_KEPT * this.#announceMs;
    for (const [effectId, byServer] of this.#heard) {
      let dropped = false;
      for (const [server, heard] of byServer) {
        if (heard.atMs >= oldestMs) continue;
        byServer.delete(server);
        dropped = true;
      }
      if (byServer.size === 0) this.#heard.delete(effectId);
      if (dropped) this.#local?.changedElsewhere(effectId);
    }
  }
}

function sameViewers(a: readonly Viewer[], b: readonly Viewer[]): boolean {
  return a.length === b.length && a.every((viewer, i) => viewer.name === b[i]!.name && viewer.display_name === b[i]!.display_name);
}

/** An announcement as a signal's payload, its viewers cut to fit the bound (the first ones kept). */
export function payloadOf(said: PresenceAnnouncement): string {
  let viewers = said.viewers;
  for (;;) {
    const payload = JSON.stringify({ ...said, viewers });
    if (Buffer.byteLength(payload, 'utf8') <= SIGNAL_PAYLOAD_BYTES_MAX || viewers.length === 0) return payload;
    viewers = viewers.slice(0, -1);
  }
}

/** Another server's announcement, or null for a payload that is none (it is ignored). */
export function readAnnouncement(payload: string): PresenceAnnouncement | null {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const server: unknown = Reflect.get(value, 'server');
  const effectId: unknown = Reflect.get(value, 'effect_id');
  const viewers: unknown = Reflect.get(value, 'viewers');
  if (typeof server !== 'string' || server === '' || typeof effectId !== 'string' || !effectIdPattern.test(effectId) || !Array.isArray(viewers)) return null;
  const read: Viewer[] = [];
  for (const viewer of viewers) {
    if (typeof viewer !== 'object' || viewer === null) return null;
    const name: unknown = Reflect.get(viewer, 'name');
    const displayName: unknown = Reflect.get(viewer, 'display_name');
    if (typeof name !== 'string' || typeof displayName !== 'string') return null;
    read.push({ name, display_name: displayName });
  }
  return { server, effect_id: effectId, viewers: read };
}
