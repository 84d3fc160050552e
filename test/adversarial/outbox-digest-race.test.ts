import { describe, expect, it } from 'vitest';
import type { JournalStore } from '../../server/journal/store.ts';
import { DIGEST_WINDOW_MS } from '../../server/outbox/projection.ts';
import type { NotificationsConfig } from '../../server/outbox/types.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, HOUR, outboxWorld, proposed } from './outbox-harness.ts';

// A message held for a digest names its window when it is *decided* (plan.ts: digestWindow of
// the clock read before the append), and a digest's id is only (person, channel, window). The
// SLA ticker's outbox.tick() runs beside the outbox's kick() in one process (background.ts
// startTicker and outbox.start), and a second process on the same journal runs both too. If the
// window closes while a pass is journaling a held message, the tick can journal that window's
// digest first, listing only the held messages it saw; the late one is then held for a digest
// that has already gone. It is never attempted, never given up, and the person never hears of the
// item: stuck forever as "in_digest".

const CONFIG: NotificationsConfig = {
  publicUrl: 'https://interlock.example',
  reminderAtShare: null,
  smtp: { host: 'smtp.example', port: 587, secure: false, user: null, password: null, from: 'Interlock <i@example.com>' },
  people: { ana: [{ kind: 'email', to: 'ana@example.com' }] },
  groups: {},
  agents: {},
  callbackAllowPrivate: [],
};

/** A journal whose next MESSAGE append, once armed, waits for `release`; `reached` resolves when it starts. */
function gatedJournal() {
  let armed = false;
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reachedResolve!: () => void;
  const reached = new Promise<void>((resolve) => {
    reachedResolve = resolve;
  });
  const wrap = (journal: JournalStore): JournalStore =>
    new Proxy(journal, {
      get(target, property) {
        if (property === 'appendIf') {
          return async (...args: Parameters<JournalStore['appendIf']>) => {
            if (armed && args[0] === 'MESSAGE') {
              // One append only: the one the pass is making when the window closes.
              armed = false;
              reachedResolve();
              await released;
            }
            return target.appendIf(...args);
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return {
    wrap,
    arm: () => {
      armed = true;
    },
    reached,
    release: () => release(),
  };
}

describe('digest windows', () => {
  it('an item held for a digest reaches the person, even when the window closed while it was being journaled', async () => {
    const gate = gatedJournal();
    const w = outboxWorld({ config: CONFIG, wrapJournal: gate.wrap });
    // Start just inside a digest window, so the window's end is a known distance away.
    const window = Math.ceil(w.appMs / DIGEST_WINDOW_MS) + 1;
    w.setApp(window * DIGEST_WINDOW_MS + 1_000);
    const outbox = w.outbox();

    // Six items in one window: five told one by one, the sixth held for the digest.
    const items: string[] = [];
    for (let i = 0; i < 6; i++) {
      const item = effectIdOf(0xd1 + i);
      items.push(item);
      await w.journal.append('PROPOSED', item, proposed(`digest-${i}`, 8_000));
      await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'], due_ms: w.appMs + 4 * HOUR }));
    }
    await outbox.kick();
    expect(w.channels.delivered.map((d) => d.content.event)).toEqual(Array(5).fill('escalated'));

    // A seventh, near the window's end: the pass decides it is held for this window...
    w.setApp((window + 1) * DIGEST_WINDOW_MS - 10);
    const seventh = effectIdOf(0xd7);
    items.push(seventh);
    await w.journal.append('PROPOSED', seventh, proposed('digest-6', 8_000));
    await w.journal.append('ESCALATED', seventh, escalated(w.appMs, { routed_to: ['ana'], due_ms: w.appMs + 4 * HOUR }));
    gate.arm();
    const pass = outbox.kick();
    await gate.reached;
    // ...and while its MESSAGE is being written, the window closes and the SLA ticker runs.
    w.setApp((window + 1) * DIGEST_WINDOW_MS + 10);
    await w.outbox('ticker-side').tick();
    gate.release();
    await pass;

    // Then time goes on: every later pass and tick, for a day.
    for (let i = 0; i < 24; i++) {
      w.advanceApp(HOUR);
      w.wall.advance(HOUR);
      await outbox.tick();
      await outbox.kick();
    }

    const toldOf = new Set<string>();
    for (const d of w.channels.delivered) {
      if (d.content.effect_id) toldOf.add(d.content.effect_id);
      for (const listed of d.content.items ?? []) toldOf.add(listed.effect_id);
    }
    // Fails today: the seventh item is never sent, alone or in a digest.
    expect([...items].filter((item) => !toldOf.has(item))).toEqual([]);
  });
});
