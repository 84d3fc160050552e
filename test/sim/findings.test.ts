import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../db/journal-store.ts';
import { Gate } from '../../server/gate/gate.ts';
import { Authority } from '../../server/gate/leases.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { MemoryRefunds } from '../../server/targets/memory-payments.ts';
import type { EntryKind, FieldsOf } from '../../shared/entries.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import type { Channels, NotificationsConfig } from '../../server/outbox/types.ts';
import { Views } from '../../server/views/views.ts';

// What the simulator found in the product, each reduced to one focused case. `it.fails` while the
// finding is open (the suite stays green and the case is kept); flip it to `it` when it is fixed.

const HOUR_MS = 3_600_000;
const PAYMENT = 'pi_sim1';

const OUTBOX_CONFIG: NotificationsConfig = {
  publicUrl: null,
  reminderAtShare: null,
  smtp: null,
  people: { ana: [{ kind: 'webhook', url: 'https://hooks.example/ana', secret: 'whsec_finding_0123456789' }] },
  groups: {},
  agents: {},
  callbackAllowPrivate: [],
};

/** One process's outbox over `journal`, with its own views. */
function outboxOver(journal: JournalStore, clock: { wallMs: number }, channels: Channels, owner = 'p1') {
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => clock.wallMs, log: { fatal: () => {}, error: () => {} } });
  const outbox = new Outbox({
    journal,
    current: async () => (await views.current()).outbox,
    notifications: OUTBOX_CONFIG,
    channels,
    nowMs: () => clock.wallMs,
    wallMs: () => clock.wallMs,
    owner,
    log: { warn: () => {}, error: () => {} },
  });
  return { views, outbox };
}

/** An item escalated to one person, with no deadline. */
async function escalateTo(journal: JournalStore, clock: { wallMs: number }, person: string): Promise<void> {
  const item = 'a'.repeat(12);
  await journal.append('PROPOSED', item, { agent: 'inbox', lease: null, premises: { currency: 'usd' }, effect: { payment_intent: PAYMENT, amount: 8_000 } });
  await journal.append('ESCALATED', item, {
    at_ms: clock.wallMs,
    reason: 'needs_judgment',
    why: 'a rule wants a person to decide',
    detail: null,
    facts: { currency: 'usd' },
    changes: [],
    repairs: [],
    route: 'default',
    group: 'ap-leads',
    routed_to: [person],
    level: 0,
    due_ms: null,
    breach: false,
  });
}

describe('simulator findings', () => {
  // Found by `npm run simulate -- --seed 303359`: recovery re-checks the approval first and the
  // facts second, so an approval that expires while the facts are read from Stripe is still resent.
  // The gate's first send was fixed for this in f97b10f (the authority is seen again right before
  // the DISPATCHED); recovery now sees it again after the facts are read (and after a resend's
  // last lookup), so a lapsed approval is refused at recovery, never resent.
  it('recover: an approval that expires while recovery reads the facts is not resent under (tier 1)', async () => {
    const clock = { wallMs: 1_700_000_000_000 };
    const target = new MemoryRefunds(1, () => clock.wallMs);
    target.addPayment(PAYMENT, 10_000);
    const journal = new MemoryJournal({ wallClockMs: () => clock.wallMs });
    const authority = new Authority({ members: () => ['fm'], maxAgeMs: 4 * HOUR_MS, nowMs: () => clock.wallMs });
    const lease = { by: 'fm', at_ms: clock.wallMs, group: 'finance-manager', escalation: 'e'.repeat(64) };
    const effect = { payment_intent: PAYMENT, amount: 2_000 };
    const crashAfterDispatch = new Gate({
      journal,
      target,
      leases: authority,
      wallClockMs: () => clock.wallMs,
      owner: 'first',
      killHook: (point) => {
        if (point === 'after_dispatch') throw new SimulatedCrash('died after the DISPATCHED, before the send');
      },
    });
    const proposal = { agent: 'inbox', lease, premises: target.capture(PAYMENT), effect, requestKey: 'req-1' };
    await expect(crashAfterDispatch.submit(proposal)).rejects.toThrow(SimulatedCrash);
    const effectId = crashAfterDispatch.effectIdOf(proposal);

    // Recovery starts a second before the approval expires; reading the payment takes two.
    clock.wallMs = lease.at_ms + 4 * HOUR_MS - 1_000;
    const explain = target.explain.bind(target);
    target.explain = async (...args) => {
      clock.wallMs += 2_000;
      return explain(...args);
    };
    const recovered = await new Gate({ journal, target, leases: authority, wallClockMs: () => clock.wallMs, owner: 'second' }).recover();

    expect(authority.problem(lease)).toBe('approval_expired');
    expect(target.refunds.filter((r) => r.effectId === effectId)).toEqual([]);
    expect(recovered.get(effectId)).toBe('REFUSED:lease_at_recovery');
  });

  // Found by `npm run simulate -- --seed 26`: a failure no retry can fix (or the last of eight) is
  // recorded as an ATTEMPT with no next attempt and then given up in a second append; a process
  // that died between the two left the message neither delivered nor given up, and no later
  // process looked at it again (nothing was due), so it stayed owed forever and nobody was told.
  it('outbox: a message whose last attempt was recorded but whose give-up was not is given up by the next process', async () => {
    const clock = { wallMs: 1_700_000_000_000 };
    const journal = new MemoryJournal({ wallClockMs: () => clock.wallMs });
    const refused: Channels = { deliver: async () => ({ ok: false, status: 400, error: 'HTTP 400', retryable: false }) };
    const process = (name: string, store: JournalStore) => outboxOver(store, clock, refused, name);
    await escalateTo(journal, clock, 'ana');
    // The first process dies as it is about to journal the give-up.
    const dying = new Proxy(journal, {
      get(target, property, receiver) {
        if (property !== 'appendIf') return Reflect.get(target, property, receiver).bind(target);
        return (kind: EntryKind, effectId: string, ...rest: [never, FieldsOf<EntryKind>]) => {
          if (kind === 'GAVE_UP') throw new SimulatedCrash('died before the give-up');
          return target.appendIf(kind, effectId, ...rest);
        };
      },
    }) as JournalStore;
    await process('first', dying).outbox.kick();
    const [messageId] = (await journal.scan(0, 100)).map(({ entry }) => entry).filter((e) => e.kind === 'MESSAGE').map((e) => e.effect_id);
    expect((await journal.entries(messageId!)).map((e) => e.kind)).toEqual(['MESSAGE', 'ATTEMPT']);

    clock.wallMs += 3_600_000;
    const next = process('second', journal);
    await next.outbox.kick();
    expect((await journal.entries(messageId!)).map((e) => e.kind)).toEqual(['MESSAGE', 'ATTEMPT', 'GAVE_UP']);
    expect((await next.views.current()).outbox.undelivered()).toEqual([]);
  });

  // Found by `npm run simulate -- --seed 4` once the simulator counted a give-up's attempts: the
  // GAVE_UP written after a failed attempt said how many attempts came before that one (0 after a
  // first attempt refused, 7 after the eighth), so the journal disagreed with its own ATTEMPTs.
  it('outbox: a message given up after a refused attempt counts that attempt', async () => {
    const clock = { wallMs: 1_700_000_000_000 };
    const journal = new MemoryJournal({ wallClockMs: () => clock.wallMs });
    const { outbox } = outboxOver(journal, clock, { deliver: async () => ({ ok: false, status: 400, error: 'HTTP 400', retryable: false }) });
    await escalateTo(journal, clock, 'ana');
    await outbox.kick();
    const entries = (await journal.scan(0, 100)).map(({ entry }) => entry);
    const gaveUp = entries.find((e) => e.kind === 'GAVE_UP');
    expect(entries.filter((e) => e.kind === 'ATTEMPT')).toHaveLength(1);
    expect(gaveUp).toMatchObject({ attempts: 1 });
  });
});
