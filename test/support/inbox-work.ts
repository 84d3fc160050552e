import type { JournalStore } from '../../server/journal/store.ts';
import { Inbox } from '../../server/inbox/inbox.ts';
import { InboxProjection, projectedWork } from '../../server/inbox/projection.ts';
import { JournalFollower } from '../../server/live/follower.ts';
import type { InboxWorld } from './inbox-world.ts';

/** A journal that records the effect id of every chain read, in order. */
export interface CountingJournal extends JournalStore {
  reads: string[];
}

export function countingJournal(inner: JournalStore): CountingJournal {
  const reads: string[] = [];
  return {
    reads,
    entries: (effectId) => {
      reads.push(effectId);
      return inner.entries(effectId);
    },
    append: (kind, effectId, fields) => inner.append(kind, effectId, fields),
    appendIf: (kind, effectId, check, fields, claim, guard) => inner.appendIf(kind, effectId, check, fields, claim, guard),
    reservations: (key) => inner.reservations(key),
    claim: (effectId, owner, ttlMs) => inner.claim(effectId, owner, ttlMs),
    release: (effectId, owner) => inner.release(effectId, owner),
    inFlight: () => inner.inFlight(),
    scan: (afterSeq, limit) => inner.scan(afterSeq, limit),
    head: () => inner.head(),
    newestSeq: () => inner.newestSeq(),
    sealedChain: (effectId) => inner.sealedChain(effectId),
    sealAt: (seq) => inner.sealAt(seq),
    chainEnds: (effectIds, throughSeq) => inner.chainEnds(effectIds, throughSeq),
    chainIds: (after, limit) => inner.chainIds(after, limit),
  };
}

/** An inbox whose sweeps are narrowed by its own projection, fed by its own follower, as the server wires them. */
export interface NarrowedInbox {
  inbox: Inbox;
  projection: InboxProjection;
  follower: JournalFollower;
}

/** Like `world.newInbox()` (the same gate options and policy), with a projection of its own narrowing its sweeps. */
export function narrowedInbox(world: InboxWorld): NarrowedInbox {
  const base = world.newInbox();
  const projection = new InboxProjection(base.name);
  const follower = new JournalFollower(base.journal);
  follower.on('entry', (entry) => projection.apply(entry));
  const inbox: Inbox = new Inbox({
    ...base.options,
    work: projectedWork(projection, () => follower.catchUp(), (request) => inbox.effectIdOf(request)),
  });
  return { inbox, projection, follower };
}

/** The same world with its inboxes (the first and every new one) narrowed. */
export function narrowWorld<W extends InboxWorld>(plain: W): W {
  const newInbox = () => narrowedInbox(plain).inbox;
  return { ...plain, newInbox, inbox: newInbox() };
}
