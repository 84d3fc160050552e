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

/** Who views items on the other servers on the storage, and how this server tells them its own (presence-relay.ts). */
export interface PresenceElsewhere {
  viewersElsewhere(effectId: string): Viewer[];
  viewedElsewhere(): Iterable<string>;
  /** This server's own viewers of an item changed (none: nobody here views it now). */
  announce(effectId: string, viewers: Viewer[]): void;
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
 * come from the views), so "Bea Novak is viewing" reaches whoever could decide it too; with
 * `elsewhere`, the people viewing it on the other servers are told too, and ours are told to them.
 */
export class Presence {
  readonly #watchers = new Map<PresenceSocket, Watcher>();

  constructor(
    private readonly options: {
      /** The groups an item was ever routed to; empty for one nobody may see. */
      groupsOfItem: (effectId: string) => ReadonlySet<string>;
      nowMs: () => number;
      elsewhere?: PresenceElsewhere;
    },
  ) {}

  /**
   * A socket joined: it is told at once who views each item its person may see (a page opened
   * while someone is viewing shows it without waiting for a change), then hears changes.
   */
  join(socket: PresenceSocket, viewer: Viewer, sees: SeesItem): void {
    this.#watchers.set(socket, { viewer, sees, viewing: null });
    const viewed = new Set<string>(this.options.elsewhere?.viewedElsewhere() ?? []);
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
      if (next !== null) this.#changed(next);
      return;
    }
    watcher.viewing = next;
    if (before !== null) this.#changed(before);
    if (next !== null) this.#changed(next);
  }

  /** A socket closed: its person stops viewing what they viewed. */
  leave(socket: PresenceSocket): void {
    const watcher = this.#watchers.get(socket);
    if (!watcher) return;
    this.#watchers.delete(socket);
    if (watcher.viewing !== null) this.#changed(watcher.viewing);
  }

  /** The people viewing an item, here and on the other servers, each once, by name. */
  viewers(effectId: string): Viewer[] {
    const byName = new Map<string, Viewer>();
    for (const viewer of this.options.elsewhere?.viewersElsewhere(effectId) ?? []) byName.set(viewer.name, viewer);
    for (const viewer of this.#ownViewers(effectId)) byName.set(viewer.name, viewer);
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Every item this server's own people view, with them (what is told to the other servers). */
  ownViewed(): Map<string, Viewer[]> {
    const viewed = new Map<string, Viewer[]>();
    for (const watcher of this.#watchers.values()) if (watcher.viewing !== null && !viewed.has(watcher.viewing)) viewed.set(watcher.viewing, this.#ownViewers(watcher.viewing));
    return viewed;
  }

  /** Who views an item on another server changed: tell everyone here who may see it. */
  changedElsewhere(effectId: string): void {
    this.#tell(effectId);
  }

  #ownViewers(effectId: string): Viewer[] {
    const byName = new Map<string, Viewer>();
    for (const watcher of this.#watchers.values()) if (watcher.viewing === effectId) byName.set(watcher.viewer.name, watcher.viewer);
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** This server's viewers of an item changed: tell the other servers, and everyone here who may see it. */
  #changed(effectId: string): void {
    this.options.elsewhere?.announce(effectId, this.#ownViewers(effectId));
    this.#tell(effectId);
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
