import { describe, expect, it } from 'vitest';
import type { FieldsOf } from '../../shared/entries.ts';
import { limits } from '../../shared/limits.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { retryDelayMs } from '../../server/outbox/outbox.ts';
import { messageId } from '../../server/outbox/plan.ts';
import { renderEmail, renderSlack } from '../../server/outbox/render.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, HOUR, NOTIFICATIONS as CONFIG, outboxWorld as world, proposed as requestProposed } from '../support/outbox-world.ts';

// The outbox's core on a journal: what is owed, journaled once under its id, delivered with
// retries, given up. The channel here records what it is handed (the channels themselves are
// tested against real SMTP and HTTP receivers in channels*.test.ts).

const proposed = (amount: number): FieldsOf<'PROPOSED'> => requestProposed('case-1', amount, { reason: 'cracked <jar>' });

async function kinds(journal: JournalStore, id: string) {
  return (await journal.entries(id)).map((e) => e.kind);
}

/** When each attempt of a message was made, in seconds after the first. */
async function attemptSeconds(journal: JournalStore, id: string): Promise<number[]> {
  const attempts = (await journal.entries(id)).flatMap((e) => (e.kind === 'ATTEMPT' ? [e.at_ms] : []));
  return attempts.map((at) => (at - attempts[0]!) / 1_000);
}

/** Kick the outbox, moving the wall clock to each next attempt, until the one message journaled is delivered or given up; its id. */
async function runUntilSettled(w: ReturnType<typeof world>): Promise<string> {
  const outbox = w.outbox();
  for (let pass = 0; pass < 1_000; pass++) {
    await outbox.kick();
    const [message, ...others] = await (await w.views.current()).outbox.history.allMessages();
    expect(others).toEqual([]);
    if (message!.delivered !== null || message!.gaveUp !== null) return message!.id;
    if (message!.nextAtMs !== null) w.wall.advance(Math.max(0, message!.nextAtMs - w.wall.nowMs));
  }
  throw new Error('the message never settled');
}

describe('the outbox', () => {
  it('tells every member and the team channel once when an item is escalated, with what waits and a link', async () => {
    const w = world();
    const item = effectIdOf(1);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs));
    const outbox = w.outbox();
    await outbox.kick();
    expect(w.channels.delivered.map((d) => `${d.recipient.kind}:${d.recipient.name}:${d.channel.kind}`).sort()).toEqual([
      'group:ap-leads:slack',
      'person:ana:email',
      'person:bea:email',
    ]);
    const toAna = w.channels.delivered.find((d) => d.recipient.name === 'ana')!;
    expect(toAna.content).toMatchObject({ event: 'escalated', effect_id: item, request_id: 'case-1', amount: 8_000, currency: 'usd', reason: 'cracked <jar>', group: 'ap-leads', level: 0, link: `https://interlock.example/items/${item}` });
    expect(toAna.id).toBe(messageId({ about: item, event: 'escalated', level: 0, recipient: { kind: 'person', name: 'ana' }, channel: 'email:0' }));
    expect(await kinds(w.journal, toAna.id)).toEqual(['MESSAGE', 'ATTEMPT']);
    // The item's own chain is untouched: its receipt does not change.
    expect(await kinds(w.journal, item)).toEqual(['PROPOSED', 'ESCALATED']);
    // Again, and from a second process: nothing new is decided or sent.
    await outbox.kick();
    await w.outbox('p2').kick();
    expect(w.channels.delivered).toHaveLength(3);
  });

  it('a message about a rule failure says how each rule failed, in the words the escalation kept, by email and Slack', async () => {
    const w = world();
    const item = effectIdOf(1);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    const failed_rules = [
      { rule: "amount within its currency's limit", words: 'over $50.00' },
      { rule: 'no flag that needs a person', words: 'flag: vip' },
    ];
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { why: 'over $50.00 · flag: vip', detail: failed_rules.map((f) => f.rule), failed_rules }));
    await w.outbox().kick();
    const toAna = w.channels.delivered.find((d) => d.recipient.name === 'ana')!;
    expect(toAna.content.why).toBe('over $50.00 · flag: vip');
    expect(renderEmail(toAna.content, w.appMs).text).toContain('Why a person:   over $50.00 · flag: vip\n');
    expect(renderSlack(toAna.content, w.appMs).text).toContain('*Why a person:* over $50.00 · flag: vip\n');
  });

  it('an escalation journaled before the words were kept is told by its failed rules, each as a condition not met', async () => {
    const w = world();
    const item = effectIdOf(1);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { detail: ['amount at most $50.00', 'payment not disputed'] }));
    await w.outbox().kick();
    const toAna = w.channels.delivered.find((d) => d.recipient.name === 'ana')!;
    expect(toAna.content.why).toBe('not met: amount at most $50.00 · not met: payment not disputed');
  });

  it('a second escalation at the same level tells nobody again; moving up tells the next group; the top breach tells it once more', async () => {
    const w = world();
    const item = effectIdOf(2);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs));
    const outbox = w.outbox();
    await outbox.kick();
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { reason: 'approval_expired' }));
    await outbox.kick();
    expect(w.channels.delivered).toHaveLength(3);
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { group: 'controller', routed_to: ['cy'], level: 1, breach: true }));
    await outbox.kick();
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { group: 'controller', routed_to: ['cy'], level: 1, breach: true, due_ms: null }));
    await outbox.kick();
    expect(w.channels.delivered.slice(3).map((d) => `${d.recipient.name}:${d.content.event}:${d.content.level}`)).toEqual(['cy:moved_up:1', 'cy:breach:1']);
  });

  it('reminds at the configured share of the SLA, once, and not after the item is decided', async () => {
    const w = world();
    const item = effectIdOf(3);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs));
    const outbox = w.outbox();
    await outbox.kick();
    w.advanceApp(HOUR);
    expect(await outbox.tick()).toBe(0);
    w.advanceApp(HOUR);
    expect(await outbox.tick()).toBe(3);
    expect(await outbox.tick()).toBe(0);
    await outbox.kick();
    expect(w.channels.delivered.slice(3).map((d) => d.content.event)).toEqual(['reminder', 'reminder', 'reminder']);
  });

  it('retries a message to a person 5 s doubling, 8 attempts at most (the last 635 s after the first), and gives up visibly', async () => {
    const w = world({ config: { ...CONFIG, people: { ana: CONFIG.people.ana! }, groups: {} } });
    const item = effectIdOf(4);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'] }));
    w.channels.answers = Array.from({ length: 8 }, () => ({ ok: false as const, status: 503, error: 'HTTP 503', retryable: true }));
    const outbox = w.outbox();
    await outbox.kick();
    const id = w.channels.delivered[0]!.id;
    for (let n = 1; n < limits.outboxPersonAttemptsMax; n++) {
      await outbox.kick();
      expect(w.channels.delivered).toHaveLength(n);
      w.wall.advance(retryDelayMs(n, () => 0.5));
      await outbox.kick();
      expect(w.channels.delivered).toHaveLength(n + 1);
    }
    expect(await kinds(w.journal, id)).toEqual(['MESSAGE', ...Array(8).fill('ATTEMPT'), 'GAVE_UP']);
    expect(await attemptSeconds(w.journal, id)).toEqual([0, 5, 15, 35, 75, 155, 315, 635]);
    w.wall.advance(2 * HOUR);
    await outbox.kick();
    expect(w.channels.delivered).toHaveLength(8);
    expect(w.log.warnings).toEqual(['message given up']);
    const state = (await (await w.views.current()).outbox.history.messagesAbout(item))[0]!;
    expect(state).toMatchObject({ attempts: 8, delivered: null, gaveUp: { reason: '8 attempts failed; the last: HTTP 503' } });
  });

  it('retries an agent callback 5 s doubling to at most 1 h until 24 h after its first attempt (33 attempts), then gives up', async () => {
    const w = world();
    const item = effectIdOf(8);
    await w.journal.append('PROPOSED', item, proposed(2_000));
    await w.journal.append('COMMITTED', item, { result: { id: 're_1' } });
    w.channels.answers = Array.from({ length: 100 }, () => ({ ok: false as const, status: 503, error: 'HTTP 503', retryable: true }));
    const id = await runUntilSettled(w);
    const seconds = await attemptSeconds(w.journal, id);
    const waits = seconds.slice(1).map((at, i) => at - seconds[i]!);
    expect(waits).toEqual([5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, ...Array(22).fill(3600)]);
    expect(seconds).toHaveLength(33);
    expect(seconds.at(-1)).toBe(84_315);
    expect(await kinds(w.journal, id)).toEqual(['MESSAGE', ...Array(33).fill('ATTEMPT'), 'GAVE_UP']);
    expect(await (await w.views.current()).outbox.history.message(id)).toMatchObject({ attempts: 33, delivered: null, gaveUp: { reason: '33 attempts failed; the last: HTTP 503' } });
  });

  it.each([
    ['shortest', 0],
    ['longest', 0.999_999],
  ])('with the %s jitter, an agent callback is still attempted until 24 h after its first attempt and never past it', async (_which, random) => {
    const w = world({ random: () => random });
    const item = effectIdOf(9);
    await w.journal.append('PROPOSED', item, proposed(2_000));
    await w.journal.append('COMMITTED', item, { result: { id: 're_1' } });
    w.channels.answers = Array.from({ length: 100 }, () => ({ ok: false as const, status: 503, error: 'HTTP 503', retryable: true }));
    const id = await runUntilSettled(w);
    const seconds = await attemptSeconds(w.journal, id);
    const n = seconds.length;
    expect(seconds.at(-1)).toBeLessThanOrEqual(86_400);
    // The wait the next attempt would have had takes it past 24 h.
    expect(seconds.at(-1)! + retryDelayMs(n, () => random) / 1_000).toBeGreaterThan(86_400);
    expect(await kinds(w.journal, id)).toEqual(['MESSAGE', ...Array(n).fill('ATTEMPT'), 'GAVE_UP']);
  });

  it('stops retrying a message to a person once its item is decided, and says why', async () => {
    const w = world({ config: { ...CONFIG, people: { ana: CONFIG.people.ana! }, groups: {}, agents: {} } });
    const item = effectIdOf(10);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    const escalation = await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'] }));
    w.channels.answers = [{ ok: false, status: 503, error: 'HTTP 503', retryable: true }];
    const outbox = w.outbox();
    await outbox.kick();
    const id = w.channels.delivered[0]!.id;
    await w.journal.append('DECIDED', item, { at_ms: w.appMs, by: 'bea', decision: 'approve', escalation: escalation.hash, group: 'ap-leads', members: ['ana', 'bea'], repair: null });
    await outbox.kick();
    w.wall.advance(2 * HOUR);
    await outbox.kick();
    expect(w.channels.delivered).toHaveLength(1);
    expect(await kinds(w.journal, id)).toEqual(['MESSAGE', 'ATTEMPT', 'GAVE_UP']);
    expect(await (await w.views.current()).outbox.history.message(id)).toMatchObject({ attempts: 1, gaveUp: { reason: 'no longer sent: the item was decided' } });
    // Ending a message that is no longer news is no failure: nothing is logged.
    expect(w.log.warnings).toEqual([]);
  });

  it('stops retrying a message to a person once its item has moved on to another level, and tells the next one', async () => {
    const w = world({ config: { ...CONFIG, people: { ana: CONFIG.people.ana!, cy: CONFIG.people.cy! }, groups: {}, agents: {} } });
    const item = effectIdOf(11);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'] }));
    w.channels.answers = [{ ok: false, status: 503, error: 'HTTP 503', retryable: true }];
    const outbox = w.outbox();
    await outbox.kick();
    const toAna = w.channels.delivered[0]!.id;
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { group: 'controller', routed_to: ['cy'], level: 1, breach: true }));
    await outbox.kick();
    w.wall.advance(2 * HOUR);
    await outbox.kick();
    expect(w.channels.delivered.map((d) => `${d.recipient.name}:${d.content.event}`)).toEqual(['ana:escalated', 'cy:moved_up']);
    expect(await (await w.views.current()).outbox.history.message(toAna)).toMatchObject({ attempts: 1, gaveUp: { reason: 'no longer sent: the item moved on to level 1 (controller)' } });
  });

  it('a digest whose every item was decided before it went is not sent', async () => {
    const w = world({ config: { ...CONFIG, people: { ana: CONFIG.people.ana! }, groups: {}, agents: {} } });
    const hashes: string[] = [];
    for (let i = 0; i < 6; i++) {
      const item = effectIdOf(200 + i);
      await w.journal.append('PROPOSED', item, { ...proposed(8_000), request: { ...proposed(8_000).request!, id: `case-${i}` } });
      hashes.push((await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'] }))).hash);
    }
    const outbox = w.outbox();
    await outbox.kick();
    expect(w.channels.delivered).toHaveLength(5);
    await w.journal.append('DECIDED', effectIdOf(205), { at_ms: w.appMs, by: 'bea', decision: 'approve', escalation: hashes[5]!, group: 'ap-leads', members: ['ana', 'bea'], repair: null });
    w.advanceApp(600_000);
    expect(await outbox.tick()).toBe(1);
    await outbox.kick();
    expect(w.channels.delivered).toHaveLength(5);
    const digest = (await (await w.views.current()).outbox.history.allMessages()).find((m) => m.event === 'digest')!;
    expect(digest).toMatchObject({ attempts: 0, delivered: null, gaveUp: { reason: 'no longer sent: every item it lists was decided or moved on' } });
  });

  it('gives up at once on a refusal no retry can fix', async () => {
    const w = world({ config: { ...CONFIG, people: { ana: CONFIG.people.ana! }, groups: {} } });
    const item = effectIdOf(5);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'] }));
    w.channels.answers = [{ ok: false, status: 550, error: 'mailbox unavailable', retryable: false }];
    await w.outbox().kick();
    expect(await kinds(w.journal, w.channels.delivered[0]!.id)).toEqual(['MESSAGE', 'ATTEMPT', 'GAVE_UP']);
  });

  it('holds a sixth item in ten minutes for the digest, which lists the held ones when the window closes', async () => {
    const w = world({ config: { ...CONFIG, people: { ana: CONFIG.people.ana! }, groups: {} } });
    for (let i = 0; i < 7; i++) {
      const item = effectIdOf(100 + i);
      await w.journal.append('PROPOSED', item, { ...proposed(8_000), request: { ...proposed(8_000).request!, id: `case-${i}` } });
      await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'] }));
    }
    const outbox = w.outbox();
    await outbox.kick();
    expect(w.channels.delivered.map((d) => d.content.event)).toEqual(Array(5).fill('escalated'));
    w.advanceApp(600_000);
    await outbox.tick();
    await outbox.kick();
    const digest = w.channels.delivered.at(-1)!;
    expect(digest.content).toMatchObject({ event: 'digest', why: '2 more items wait for you' });
    expect(digest.content.items?.map((i) => i.request_id)).toEqual(['case-5', 'case-6']);
  });

  it('an item held for a digest reads in the digest until the digest is delivered, then delivered, in the digest', async () => {
    const w = world({ config: { ...CONFIG, people: { ana: CONFIG.people.ana! }, groups: {} } });
    const items = Array.from({ length: 6 }, (_, i) => effectIdOf(200 + i));
    for (const [i, item] of items.entries()) {
      await w.journal.append('PROPOSED', item, { ...proposed(8_000), request: { ...proposed(8_000).request!, id: `held-${i}` } });
      await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'] }));
    }
    const outbox = w.outbox();
    await outbox.kick();
    const sixth = items[5]!;
    const told = async () => (await w.views.current()).outbox.history.notificationsAbout(sixth);
    expect((await told()).map((m) => [m.status, m.digest])).toEqual([['in_digest', null]]);
    w.advanceApp(600_000);
    // The digest is decided, and its first attempt fails: the held message is where its digest is.
    w.channels.answers = [{ ok: false, status: 503, error: 'try later', retryable: true }];
    await outbox.tick();
    await outbox.kick();
    const digestId = w.channels.delivered.at(-1)!.id;
    expect((await told()).map((m) => [m.status, m.digest, m.attempts, m.last_error])).toEqual([['retrying', digestId, 1, expect.stringContaining('try later')]]);
    w.wall.advance(HOUR);
    await outbox.kick();
    const [record] = await told();
    expect([record?.status, record?.digest, record?.delivered_at_ms]).toEqual(['delivered', digestId, expect.any(Number)]);
  });

  it('a delivery is shown on the application clock, like its decision: with the clock moved 4 h on, it is never hours before it', async () => {
    const w = world({ config: { ...CONFIG, groups: {} } });
    const item = effectIdOf(300);
    // Test mode: the application clock was moved 4 h past the wall clock before the escalation.
    w.advanceApp(4 * HOUR);
    await w.journal.append('PROPOSED', item, proposed(8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana'] }));
    const outbox = w.outbox();
    await outbox.kick();
    w.wall.advance(1_000);
    const [record] = await (await w.views.current()).outbox.history.notificationsAbout(item);
    expect(record?.status).toBe('delivered');
    expect(record!.delivered_at_ms! - record!.decided_at_ms).toBeGreaterThanOrEqual(0);
    expect(record!.delivered_at_ms! - record!.decided_at_ms).toBeLessThan(60_000);
  });

  it('calls the agent back once when its request is final, with the answer GET gives; not for one final before the delivery window', async () => {
    const w = world();
    const item = effectIdOf(6);
    await w.journal.append('PROPOSED', item, { ...proposed(2_000), agent: 'inbox' });
    await w.journal.append('COMMITTED', item, { result: { id: 're_1' } });
    await w.outbox().kick();
    const callback = w.channels.delivered.find((d) => d.recipient.kind === 'agent')!;
    expect(callback.content.body).toMatchObject({ request_id: 'case-1', effect_id: item, status: 'COMMITTED' });
    expect(callback.channel).toMatchObject({ kind: 'callback', url: 'https://agent.example/cb' });

    const old = effectIdOf(7);
    await w.journal.append('PROPOSED', old, proposed(2_000));
    await w.journal.append('COMMITTED', old, {});
    w.wall.advance(limits.outboxDeliveryWindowMs + 1);
    await w.journal.append('CONFIRMED', old, { via: 'webhook', event: 'evt_1', refund: 're_2', status: 'failed', amount: 2_000, payment_intent: 'pi_1', created: null });
    await w.outbox().kick();
    // The final status is too old to announce; Stripe's failure just now is not.
    expect(w.channels.delivered.filter((d) => d.content.effect_id === old).map((d) => d.content.event)).toEqual(['failed_at_stripe']);
  });
});
