import type { LiveClientMessage, LiveMessage, Viewer } from '../../shared/api.ts';
import { limits } from '../../shared/limits.ts';

/** What presence needs of a socket: send text, and whether it is open. */
export interface PresenceSocket {
  send(data: string): void;
  readonly readyState: number;
}

/** The ws library's OPEN. */
const OPEN = 1;
const effectIdPattern = new RegExp(`^[0-9a-f]{${limits.effectIdHexChars}}$`);

/** Whether a person may see an item routed to these groups (asked of the access rules by the live route). */
export type SeesItem = (itemGroups: ReadonlySet<string>) => boolean;

interface Watcher {
  viewer: Viewer;
  sees: SeesItem;
  viewing: string | null;
}

/** A page's `{type:'viewing', effect_id}`, or null for anything else. */
export function readViewing(text: string): LiveClientMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || (value as { type?: unknown }).type !== 'viewing') return null;
  const effectId = (value as { effect_id?: unknown }).effect_id;
  if (effectId === null) return { type: 'viewing', effect_id: null };
  return typeof effectId === 'string' && effectIdPattern.test(effectId) ? { type: 'viewing', effect_id: effectId } : null;
}

/**
 * Who is looking at which item now, over the live websocket: never journaled, gone with the
 * socket. Each change is told to every socket whose groups may see the item (the item's groups
 * come from the views), so "Bea Novak is viewing" reaches whoever could decide it too.
 */
export class Presence {
  readonly #watchers = new Map<PresenceSocket, Watcher>();

  constructor(
    private readonly options: {
      /** The groups an item was ever routed to; empty for one nobody may see. */
      groupsOfItem: (effectId: string) => ReadonlySet<string>;
      nowMs: () => number;
    },
  ) {}

  /**
   * A socket joined: it is told at once who views each item its person may see (a page opened
   * while someone is viewing shows it without waiting for a change), then hears changes.
   */
  join(socket: PresenceSocket, viewer: Viewer, sees: SeesItem): void {
    this.#watchers.set(socket, { viewer, sees, viewing: null });
    const viewed = new Set<string>();
    for (const watcher of this.#watchers.values()) if (watcher.viewing !== null) viewed.add(watcher.viewing);
    for (const effectId of viewed) {
      if (!this.#sees(sees, effectId)) continue;
      this.#send(socket, this.#message(effectId));
    }
  }

  /** The page says which item it shows (null: none); an item it may not see is ignored. */
  view(socket: PresenceSocket, effectId: string | null): void {
    const watcher = this.#watchers.get(socket);
    if (!watcher) return;
    const allowed = effectId === null || this.#sees(watcher.sees, effectId);
    const next = allowed ? effectId : null;
    const before = watcher.viewing;
    if (before === next) {
      if (next !== null) this.#tell(next);
      return;
    }
    watcher.viewing = next;
    if (before !== null) this.#tell(before);
    if (next !== null) this.#tell(next);
  }

  /** A socket closed: its person stops viewing what they viewed. */
  leave(socket: PresenceSocket): void {
    const watcher = this.#watchers.get(socket);
    if (!watcher) return;
    this.#watchers.delete(socket);
    if (watcher.viewing !== null) this.#tell(watcher.viewing);
  }

  /** The people viewing an item, each once, by name. */
  viewers(effectId: string): Viewer[] {
    const byName = new Map<string, Viewer>();
    for (const watcher of this.#watchers.values()) if (watcher.viewing === effectId) byName.set(watcher.viewer.name, watcher.viewer);
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Tell everyone who may see the item who views it now. */
  #tell(effectId: string): void {
    const text = this.#message(effectId);
    for (const [socket, watcher] of this.#watchers) if (this.#sees(watcher.sees, effectId)) this.#send(socket, text);
  }

  /** Whether a watcher may see the item, by the groups it was ever routed to. */
  #sees(sees: SeesItem, effectId: string): boolean {
    return sees(this.options.groupsOfItem(effectId));
  }

  #message(effectId: string): string {
    const message: LiveMessage = { type: 'presence', effect_id: effectId, viewers: this.viewers(effectId), now_ms: this.options.nowMs() };
    return JSON.stringify(message);
  }

  #send(socket: PresenceSocket, text: string): void {
    if (socket.readyState !== OPEN) return;
    try {
      socket.send(text);
    } catch {
      // A socket closing as we send: its close removes it.
    }
  }
}
