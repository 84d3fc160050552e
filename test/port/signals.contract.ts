import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { SIGNAL_PAYLOAD_BYTES_MAX, type SignalChannel, SignalRefusedError, type Signals } from '../../db/port/signals.ts';
import { StoreClosedError } from '../../db/port/errors.ts';
import type { ContractCase } from './contract.ts';

// What every signals store does (db/port/signals.ts): a signal published on a channel is heard,
// as published, by every subscriber of that channel (another server's too, where servers share
// them) and by no other; in the order published; not over the payload bound; and, where the
// listening connection can drop (PostgreSQL), the reconnect hooks are called once it is made again
// and signals are heard again after it.

export interface SignalsEnv {
  store: Signals;
  /** Signals of another server on the same storage (the same store where no other server can hear). */
  other(): Signals;
  /** Cut every listening connection to the storage, as a network cut or a restarted pooler does; absent where there is none. */
  cut?(): Promise<void>;
}

/** A subscriber's ears: what it heard, in order, and a wait for what it should hear. */
interface Ears {
  heard: string[];
  stop: () => void;
  /** Resolves once `payload` was heard, or fails after `withinMs`. */
  hears(payload: string, withinMs?: number): Promise<void>;
}

async function listen(signals: Signals, channel: SignalChannel): Promise<Ears> {
  const heard: string[] = [];
  const stop = await signals.subscribe(channel, (payload) => heard.push(payload));
  return { heard, stop, hears: (payload, withinMs = 3_000) => until(() => heard.includes(payload), `"${payload.slice(0, 40)}" heard on ${channel}`, withinMs) };
}

/** Wait until `done()` holds, polling every 5 ms; fail naming `what` after `withinMs`. */
export async function until(done: () => boolean, what: string, withinMs = 3_000): Promise<void> {
  const byMs = performance.now() + withinMs;
  while (!done()) {
    if (performance.now() > byMs) throw new Error(`not within ${withinMs} ms: ${what}`);
    await sleep(5);
  }
}

export const signalsCases: Record<string, ContractCase<SignalsEnv>> = {
  "a signal is heard, as published, by every subscriber of its channel, another server's too, and on no other channel": async ({ store, other }) => {
    const b = other();
    const mine = await listen(store, 'interlock_journal');
    const theirs = await listen(b, 'interlock_journal');
    const presence = await listen(b, 'interlock_presence');
    const payload = '{"seq":42,"name":"Zoë Ångström – 検査"}';
    await store.publish('interlock_journal', payload);
    await theirs.hears(payload);
    await mine.hears(payload);
    await b.publish('interlock_presence', 'p1');
    await presence.hears('p1');
    expect(mine.heard).toEqual([payload]);
    expect(theirs.heard).toEqual([payload]);
    expect(presence.heard).toEqual(['p1']);
  },

  'signals one server publishes one after another are heard in that order, each once': async ({ store, other }) => {
    const theirs = await listen(other(), 'interlock_journal');
    const sent = Array.from({ length: 25 }, (_, i) => String(i + 1));
    for (const payload of sent) await store.publish('interlock_journal', payload);
    await theirs.hears('25');
    await sleep(50);
    expect(theirs.heard).toEqual(sent);
  },

  'a payload over the bound (in UTF-8 bytes) or a channel off the list is refused, and nothing of it is heard': async ({ store, other }) => {
    const theirs = await listen(other(), 'interlock_presence');
    // Two bytes a character: at the bound in bytes is half as many characters.
    const atBound = 'é'.repeat(SIGNAL_PAYLOAD_BYTES_MAX / 2);
    await store.publish('interlock_presence', atBound);
    const over = `${atBound}x`;
    await expect(store.publish('interlock_presence', over)).rejects.toThrow(SignalRefusedError);
    await expect(store.publish('interlock_presence', over)).rejects.toThrow(new RegExp(`at most ${SIGNAL_PAYLOAD_BYTES_MAX} bytes; this one has ${SIGNAL_PAYLOAD_BYTES_MAX + 1}`));
    await expect(store.publish('pg_catalog' as SignalChannel, 'x')).rejects.toThrow(SignalRefusedError);
    await expect(store.subscribe('interlock_other' as SignalChannel, () => {})).rejects.toThrow(SignalRefusedError);
    await store.publish('interlock_presence', 'after');
    await theirs.hears('after');
    expect(theirs.heard).toEqual([atBound, 'after']);
  },

  'a stopped subscription hears nothing more; the others on the channel still hear': async ({ store, other }) => {
    const b = other();
    const first = await listen(b, 'interlock_journal');
    const second = await listen(b, 'interlock_journal');
    await store.publish('interlock_journal', 'one');
    await first.hears('one');
    await second.hears('one');
    first.stop();
    await store.publish('interlock_journal', 'two');
    await second.hears('two');
    await sleep(50);
    expect(first.heard).toEqual(['one']);
    expect(second.heard).toEqual(['one', 'two']);
  },

  'a closed store refuses to publish or subscribe, and its subscribers hear nothing more; closing twice closes once': async ({ store, other }) => {
    const b = other();
    const mine = await listen(store, 'interlock_journal');
    const theirs = b === store ? null : await listen(b, 'interlock_journal');
    await store.close();
    await store.close();
    await expect(store.publish('interlock_journal', 'x')).rejects.toThrow(StoreClosedError);
    await expect(store.subscribe('interlock_journal', () => {})).rejects.toThrow(StoreClosedError);
    if (theirs !== null) {
      await b.publish('interlock_journal', 'after');
      await theirs.hears('after');
    }
    await sleep(50);
    expect(mine.heard).toEqual([]);
  },
};

/** The cases of a store whose listening connection can drop (PostgreSQL), besides every store's. */
export const droppableSignalsCases: Record<string, ContractCase<SignalsEnv>> = {
  ...signalsCases,
  'after the listening connection is cut, it is made again, the reconnect hook is called, and signals are heard again': async ({ store, other, cut }) => {
    if (cut === undefined) throw new Error('this case needs a storage whose listening connection can be cut');
    const b = other();
    const mine = await listen(store, 'interlock_journal');
    let reconnects = 0;
    const stopHook = store.onReconnect(() => {
      reconnects += 1;
    });
    await b.publish('interlock_journal', 'before');
    await mine.hears('before');
    expect(reconnects).toBe(0);
    await cut();
    await until(() => reconnects === 1, 'the reconnect hook called once', 5_000);
    // Heard again from another server, on both channels, with no new subscription.
    const presence: string[] = [];
    await store.subscribe('interlock_presence', (payload) => presence.push(payload));
    await b.publish('interlock_journal', 'after');
    await b.publish('interlock_presence', 'after');
    await mine.hears('after');
    await until(() => presence.includes('after'), 'a presence signal heard after the cut');
    // A second cut is recovered from as the first.
    await cut();
    await until(() => reconnects === 2, 'the reconnect hook called again', 5_000);
    await b.publish('interlock_journal', 'again');
    await mine.hears('again');
    stopHook();
  },
};
