import { afterEach, describe, expect, it } from 'vitest';
import { MemorySignals } from '../../db/memory/signals.ts';
import { SIGNAL_PAYLOAD_BYTES_MAX } from '../../db/port/signals.ts';
import { Presence, type PresenceSocket } from '../../server/live/presence.ts';
import { PRESENCE_PERIODS_KEPT, PresenceRelay, payloadOf, readAnnouncement } from '../../server/live/presence-relay.ts';
import type { Viewer } from '../../shared/api.ts';

// Presence across servers, over signals shared in memory: each "server" is a Presence with a relay
// of its own, named apart. A page on one is told who views an item on the other, each person once,
// and forgets another server's viewers once that server has not told them for three periods.

const ITEM = 'a1b2c3d4e5f6';
// Long enough that a loaded machine's late timers (a stall of a few hundred ms in a full test run)
// do not pass three periods while the announcing server lives.
const ANNOUNCE_MS = 250;

const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

/** A socket that keeps what it was sent. */
function socket(): PresenceSocket & { sent: Array<{ effect_id: string; viewers: Viewer[] }> } {
  const sent: Array<{ effect_id: string; viewers: Viewer[] }> = [];
  return { readyState: 1, sent, send: (data) => sent.push(JSON.parse(data)) };
}

const viewer = (name: string): Viewer => ({ name, display_name: name.toUpperCase() });
const namesLast = (s: ReturnType<typeof socket>) => s.sent.filter((m) => m.effect_id === ITEM).at(-1)?.viewers.map((v) => v.name);

async function until(done: () => boolean, withinMs = 2_000): Promise<void> {
  const byMs = performance.now() + withinMs;
  while (!done()) {
    if (performance.now() > byMs) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A server: its presence, relayed on `signals` as `name`. */
async function server(signals: MemorySignals, name: string) {
  const relay = new PresenceRelay({ signals, server: name, announceMs: ANNOUNCE_MS });
  const presence = new Presence({ groupsOfItem: () => new Set(['g']), nowMs: () => 0, elsewhere: relay });
  await relay.start(presence);
  stops.push(() => relay.stop());
  return { presence, relay };
}

describe('presence across servers', () => {
  it('a viewer on one server is told to pages on the other, each person once, and gone when they leave', async () => {
    const signals = new MemorySignals();
    const a = await server(signals, 'server-a');
    const b = await server(signals, 'server-b');
    const anaOnA = socket();
    const beaOnB = socket();
    a.presence.join(anaOnA, viewer('ana'), () => true);
    b.presence.join(beaOnB, viewer('bea'), () => true);
    a.presence.view(anaOnA, ITEM);
    await until(() => namesLast(beaOnB)?.join() === 'ana');
    b.presence.view(beaOnB, ITEM);
    await until(() => namesLast(anaOnA)?.join() === 'ana,bea');
    expect(namesLast(beaOnB)).toEqual(['ana', 'bea']);
    // Ana on both servers is one viewer.
    const anaOnB = socket();
    b.presence.join(anaOnB, viewer('ana'), () => true);
    // Joining, a page is told at once who views what, on every server.
    expect(namesLast(anaOnB)).toEqual(['ana', 'bea']);
    b.presence.view(anaOnB, ITEM);
    expect(b.presence.viewers(ITEM).map((v) => v.name)).toEqual(['ana', 'bea']);
    b.presence.leave(anaOnB);
    a.presence.leave(anaOnA);
    await until(() => namesLast(beaOnB)?.join() === 'bea');
  });

  it("a server that stops telling (killed) has its viewers forgotten after three periods, not before two", async () => {
    const signals = new MemorySignals();
    const a = await server(signals, 'server-a');
    const b = await server(signals, 'server-b');
    const anaOnA = socket();
    const beaOnB = socket();
    a.presence.join(anaOnA, viewer('ana'), () => true);
    b.presence.join(beaOnB, viewer('bea'), () => true);
    a.presence.view(anaOnA, ITEM);
    await until(() => namesLast(beaOnB)?.join() === 'ana');
    // Re-announced every period, ana stays while A lives.
    await new Promise((resolve) => setTimeout(resolve, (PRESENCE_PERIODS_KEPT + 2) * ANNOUNCE_MS));
    expect(b.presence.viewers(ITEM).map((v) => v.name)).toEqual(['ana']);
    a.relay.stop();
    const stoppedMs = performance.now();
    await until(() => namesLast(beaOnB)?.length === 0, (PRESENCE_PERIODS_KEPT + 3) * ANNOUNCE_MS + 500);
    expect(performance.now() - stoppedMs).toBeGreaterThanOrEqual((PRESENCE_PERIODS_KEPT - 1) * ANNOUNCE_MS);
  });

  it('an announcement fits the signal bound, its viewers cut to fit; a malformed one is ignored', () => {
    const many = Array.from({ length: 200 }, (_, i) => viewer(`person-${i}`));
    const payload = payloadOf({ server: 's', effect_id: ITEM, viewers: many });
    expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(SIGNAL_PAYLOAD_BYTES_MAX);
    const read = readAnnouncement(payload);
    expect(read?.viewers.length).toBeGreaterThan(10);
    expect(read?.viewers).toEqual(many.slice(0, read!.viewers.length));
    for (const bad of ['nope', '{}', JSON.stringify({ server: 's', effect_id: '../x', viewers: [] }), JSON.stringify({ server: 's', effect_id: ITEM, viewers: [{ name: 1 }] })]) {
      expect(readAnnouncement(bad)).toBeNull();
    }
  });
});
