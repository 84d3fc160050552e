import type { CurrentFacts, InboxItem, LiveMessage } from '../../shared/api.ts';
import type { ItemChange } from '../inbox/projection.ts';
import { summaryItem } from '../inbox/summary.ts';
import type { InboxView } from '../inbox/view.ts';
import { type Audience, LiveHub, type LiveSocket } from '../live/hub.ts';

/** The close code live sockets get when the views become unavailable: the page reconnects and is told 503. */
const CLOSE_JOURNAL_UNAVAILABLE = 1011;

/**
 * What the live pages are told of the views: items that changed, each shown through the decoration
 * installed (its current facts and the approvals that still count, display only: the views
 * themselves never hold it), facts read again, and what moved for everyone.
 */
export class LiveFeed {
  readonly #hub: LiveHub;
  /** How items are shown on the way out (with their current facts); the projections never hold it. */
  #decorate: (item: InboxItem) => InboxItem = (item) => item;

  constructor(nowMs: () => number) {
    this.#hub = new LiveHub(nowMs);
  }

  /** True while a live page listens: items before and after a change are built only then. */
  get listening(): boolean {
    return this.#hub.listening;
  }

  /** Tell the pages that may see it that an item changed, shown as decorated. */
  publishItem(change: ItemChange): void {
    this.#hub.publishItem(change.after === null ? change : { ...change, after: this.#decorate(change.after) });
  }

  /** Add a live socket for these groups: it is sent the inbox's queue now, then every change. */
  join(socket: LiveSocket, groups: Audience, inbox: InboxView): () => void {
    return this.#hub.join(socket, groups, inbox.queue(groups).map(this.#decorate));
  }

  decorateItems(decorate: (item: InboxItem) => InboxItem): void {
    this.#decorate = decorate;
  }

  shown(item: InboxItem): InboxItem {
    return this.#decorate(item);
  }

  /** Tell the live pages that may see the item (its group now) that its payment's facts were read again. */
  publishFacts(inbox: InboxView, effectId: string, current: CurrentFacts): void {
    const summary = inbox.chains.get(effectId);
    const item = summary !== undefined && inbox.owned(summary) ? summaryItem(summary) : null;
    if (item !== null) this.#hub.publishFacts(effectId, item.group, current);
  }

  broadcast(message: LiveMessage): void {
    this.#hub.broadcast(message);
  }

  /** Close every live socket: the views became unavailable. */
  closeUnavailable(): void {
    this.#hub.closeAll(CLOSE_JOURNAL_UNAVAILABLE, 'journal_unavailable');
  }
}
