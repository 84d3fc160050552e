import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendSealedMax } from '../../db/journal-base.ts';
import { MemoryJournal, SqliteJournal } from '../../db/journal-store.ts';
import { type OpenDatabase, openDatabase } from '../../db/open.ts';
import { storageOver } from '../../db/sqlite-storage.ts';
import { CONFIG_CHAIN_ID, type ConfigEntry, type Entry, type Escalated, MESSAGE_KINDS, type MessageEntry } from '../../shared/entries.ts';
import { escalationWhy } from '../../shared/escalation-words.ts';
import { AppClock } from '../../server/app/clock.ts';
import { InboxProjection } from '../../server/inbox/projection.ts';
import { boundRequest, chainState, waitsItsTurn } from '../../server/inbox/state.ts';
import { summaryState } from '../../server/inbox/summary.ts';
import { approvalsOf, latestEscalation } from '../../server/journal/chain.ts';
import { entryShapeProblem } from '../../server/journal/shapes.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { Outbox } from '../../server/outbox/outbox.ts';
import { messageId } from '../../server/outbox/plan.ts';
import type { Channels, Delivery, Recipient } from '../../server/outbox/types.ts';
import { signReceipt } from '../../server/receipts/receipts.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { createServices, startServices } from '../../server/app/services.ts';
import { Views } from '../../server/views/views.ts';
import { messageViews, type OutboxViewsFile } from '../fixtures/journals/outbox-replay.ts';
import { fixtureSigningKey, fixtureText, journalViews, readFixture, scanAll, type ViewsFile, wireViews } from '../fixtures/journals/replay.ts';
import { testConfig } from '../support/app-world.ts';
import { decideConfigAtStart, journaledConfig, rosterChanges } from '../../server/config/config-at-start.ts';

// Fixture journals (DESIGN "What wave 2 adds"): each test/fixtures/journals/day-N.jsonl was written
// once by the code of its day (see its write-day-N.ts) and is never regenerated. Every later code
// must still load it, check every hash and link, and rebuild from it the very views it was written
// with (day-N.views.json). A change that breaks this breaks every journal already on disk.

const FIXTURES = fileURLToPath(new URL('../fixtures/journals/', import.meta.url));
const DAYS = readdirSync(FIXTURES)
  .filter((name) => /^day-\d+\.jsonl$/.test(name))
  .map((name) => name.replace(/\.jsonl$/, ''))
  .sort();

/** Store sealed entries the way an import does, at most `appendSealedMax` per call. */
async function load(journal: JournalStore & { appendSealed(sealed: readonly Entry[]): Promise<void> }, entries: readonly Entry[]): Promise<void> {
  for (let at = 0; at < entries.length; at += appendSealedMax) await journal.appendSealed(entries.slice(at, at + appendSealedMax));
}

it('there is at least one fixture journal, each with its views', () => {
  expect(DAYS).toContain('day-1');
  for (const day of DAYS) expect(readdirSync(FIXTURES)).toContain(`${day}.views.json`);
});

describe.each(DAYS)('%s', (day) => {
  const text = readFileSync(join(FIXTURES, `${day}.jsonl`), 'utf8');
  const entries = readFixture(join(FIXTURES, `${day}.jsonl`));
  const file = JSON.parse(readFileSync(join(FIXTURES, `${day}.views.json`), 'utf8')) as ViewsFile;
  const expected = file.views;
  const written = `${day} (written by ${file.written_by})`;
  // The journals' own clock: a little after the day's last entry; nothing here should write.
  const lastMs = Math.max(...entries.map((e) => e.ts_ms));
  const clock = new AppClock(() => lastMs + 60_000);

  let dir: string;
  let database: OpenDatabase;
  let sqlite: SqliteJournal;
  let memory: MemoryJournal;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `interlock-fixture-${day}-`));
    database = openDatabase(join(dir, 'interlock.sqlite'));
    sqlite = new SqliteJournal({ db: database.db, wallClockMs: () => clock.wallMs() });
    memory = new MemoryJournal({ wallClockMs: () => clock.wallMs() });
    await load(sqlite, entries);
    await load(memory, entries);
  });
  afterAll(() => {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${written}: loads through appendSealed into SQLite and memory, every hash and link checked, and reads back byte for byte`, async () => {
    expect(entries).toHaveLength(expected.entries);
    expect(fixtureText(await scanAll(sqlite))).toBe(text);
    expect(fixtureText(await scanAll(memory))).toBe(text);
  });

  it(`${written}: rebuilds to the views it was written with, folded as at start-up (SQLite) and applied as live (memory)`, async () => {
    const folded = wireViews(sqlite, expected.inbox_name, 'fold');
    await folded.follower.catchUp();
    expect(await journalViews(folded, await scanAll(sqlite), sqlite, expected.groups)).toEqual(expected);
    const applied = wireViews(memory, expected.inbox_name, 'apply');
    await applied.follower.catchUp();
    expect(await journalViews(applied, await scanAll(memory), memory, expected.groups)).toEqual(expected);
  });

  it(`${written}: every chain's receipt verifies, signed with the fixture key`, () => {
    expect(expected.chains.length).toBeGreaterThan(0);
    expect(expected.chains.filter((chain) => !chain.receipt.valid || chain.receipt.problems.length > 0)).toEqual([]);
  });

  describe('start-up over it', () => {
    let sandbox: Sandbox;
    beforeAll(async () => {
      sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
    });
    afterAll(async () => {
      await sandbox.close();
    });

    it(`${written}: start-up recovery writes nothing, since the day left nothing in flight, and the server's own replay shows the same views`, async () => {
      expect(expected.in_flight).toEqual([]);
      const errors: unknown[] = [];
      const services = createServices({
        config: { ...testConfig(), inboxName: expected.inbox_name },
        clock,
        storage: storageOver(database),
        dataDir: join(dir, 'data'),
        stripe: sandbox.stripe(),
        sandbox: true,
        onError: (effectId, error) => errors.push([effectId, error]),
      });
      await startServices(services);
      expect(errors).toEqual([]);
      expect(fixtureText(await scanAll(services.journal))).toBe(text);
      const { inbox, scoreboard } = await services.views.current();
      const replayed = { projection: inbox, scoreboard };
      expect(await journalViews(replayed, entries, services.journal, expected.groups)).toEqual(expected);
      expect(await services.inbox.refresh()).toEqual(new Map());
      expect(await services.inbox.executeApproved()).toEqual(new Map());
      expect(fixtureText(await scanAll(services.journal))).toBe(text);
    });
  });
});

// The words of failed rules (ESCALATED `failed_rules`, day-2 on): an escalation that kept them is
// read in them, as written; one journaled before (day-1) names its failed rules only, and reads as
// those rules not met, never as if they had passed.
describe('the words of failed rules, as each journal kept them', () => {
  const views = (day: string) => (JSON.parse(readFileSync(join(FIXTURES, `${day}.views.json`), 'utf8')) as ViewsFile).views;
  const open = (day: string) => Object.values(views(day).queues).flat().filter((item) => item.reason === 'needs_judgment');
  const whyOf = (day: string) => Object.fromEntries(open(day).map((item) => [item.request.id, escalationWhy(item)]));

  it('day-2 (written with them): every rule failure reads in its words, moved up and shown again alike', () => {
    expect(whyOf('day-2')).toEqual({
      'jpy-2': 'over ¥7,000',
      'eur-1': 'over €50.00',
      'kwd-1': 'no amount limit for KWD · disputed',
      'fraud-1': 'flag: fraud_review',
    });
    for (const entry of readFixture(join(FIXTURES, 'day-2.jsonl'))) {
      if (entry.kind === 'ESCALATED' && entry.reason === 'needs_judgment') expect(entry.why).toBe(entry.failed_rules?.map((f) => f.words).join(' · '));
    }
  });

  it('day-1 (written before them): its open rule failures are worded as they failed, from the facts each escalation kept, never by the names of the rules', () => {
    expect(whyOf('day-1')).toEqual({ 'breach-2': 'over $50.00', 'queued-1': 'flag: fraud_review' });
  });
});

// The outbox's fixture journals: outbox-N.jsonl was written once by the code that brought the
// outbox's entries (see write-outbox-N.ts). Every later code must load it with every hash, link
// and shape checked, rebuild from it the state of each message it was written with
// (outbox-N.views.json), and owe nothing new over it: a journal already on disk must never make
// a restarted server tell anyone anything twice.
const OUTBOXES = readdirSync(FIXTURES)
  .filter((name) => /^outbox-\d+\.jsonl$/.test(name))
  .map((name) => name.replace(/\.jsonl$/, ''))
  .sort();

/** Channels that record what they are handed and take it. */
class RecordingChannels implements Channels {
  readonly delivered: Delivery[] = [];

  async deliver(delivery: Delivery) {
    this.delivered.push(delivery);
    return { ok: true as const, status: 200, detail: 'taken' };
  }
}

const MESSAGE_KIND_SET: ReadonlySet<string> = new Set(MESSAGE_KINDS);

it('there is at least one outbox fixture journal, each with its views', () => {
  expect(OUTBOXES).toContain('outbox-1');
  for (const name of OUTBOXES) expect(readdirSync(FIXTURES)).toContain(`${name}.views.json`);
});

describe.each(OUTBOXES)('%s', (name) => {
  const text = readFileSync(join(FIXTURES, `${name}.jsonl`), 'utf8');
  const entries = readFixture(join(FIXTURES, `${name}.jsonl`));
  const file = JSON.parse(readFileSync(join(FIXTURES, `${name}.views.json`), 'utf8')) as OutboxViewsFile;
  const written = `${name} (written by ${file.written_by})`;
  // A minute after the last entry: no reminder, digest or retry has come due since.
  const lastMs = Math.max(...entries.map((e) => e.ts_ms));
  const clock = new AppClock(() => lastMs + 60_000);
  const chains = new Map<string, Entry[]>();
  for (const entry of entries) chains.set(entry.effect_id, [...(chains.get(entry.effect_id) ?? []), entry]);

  let dir: string;
  let database: OpenDatabase;
  let sqlite: SqliteJournal;
  let memory: MemoryJournal;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `interlock-fixture-${name}-`));
    database = openDatabase(join(dir, 'interlock.sqlite'));
    sqlite = new SqliteJournal({ db: database.db, wallClockMs: () => clock.wallMs() });
    memory = new MemoryJournal({ wallClockMs: () => clock.wallMs() });
    await load(sqlite, entries);
    await load(memory, entries);
  });
  afterAll(() => {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${written}: loads through appendSealed into SQLite and memory, every hash, link and shape checked, and reads back byte for byte`, async () => {
    expect(entries.map((entry) => entryShapeProblem(entry as never)).filter((problem) => problem !== null)).toEqual([]);
    expect(fixtureText(await scanAll(sqlite))).toBe(text);
    expect(fixtureText(await scanAll(memory))).toBe(text);
  });

  it(`${written}: each message is a chain of its own under the id its key hashes to, and no item's chain holds a message's entry`, () => {
    const messages = [...chains.values()].filter((chain) => chain[0]!.kind === 'MESSAGE');
    expect(messages).toHaveLength(file.messages.length);
    for (const [first, ...rest] of messages) {
      const message = first as MessageEntry;
      const covers = Array.isArray(message.content.covers) ? { covers: message.content.covers.filter((id): id is string => typeof id === 'string') } : {};
      const key = { about: message.about, event: message.event, level: message.level, recipient: message.recipient as Recipient, channel: message.channel, ...covers };
      expect(messageId(key)).toBe(message.effect_id);
      expect(rest.map((e) => e.kind).filter((kind) => kind !== 'ATTEMPT' && kind !== 'GAVE_UP')).toEqual([]);
      const gaveUp = rest.find((e) => e.kind === 'GAVE_UP');
      if (gaveUp?.kind === 'GAVE_UP') expect(gaveUp.attempts).toBe(rest.filter((e) => e.kind === 'ATTEMPT').length);
      if (message.about !== null) expect(chains.get(message.about)?.[0]?.kind).toBe('PROPOSED');
    }
    const items = [...chains.values()].filter((chain) => chain[0]!.kind !== 'MESSAGE');
    expect(items.flat().filter((entry) => MESSAGE_KIND_SET.has(entry.kind))).toEqual([]);
  });

  it(`${written}: the server's views rebuilt from it (SQLite and memory) show each message delivered, given up or in its digest, as written`, async () => {
    for (const journal of [sqlite, memory]) {
      const views = new Views({ journal, inboxName: 'inbox', nowMs: () => clock.nowMs(), log: { fatal: () => {}, error: () => {} } });
      expect(messageViews(await (await views.current()).outbox.history.allMessages())).toEqual(file.messages);
    }
    // What the day was: told at once or after retries, refused and given up, reminded, moved up, held for a digest, called back.
    const tally: Record<string, number> = {};
    for (const m of file.messages) tally[`${m.event}:${m.state}`] = (tally[`${m.event}:${m.state}`] ?? 0) + 1;
    expect(tally).toEqual({
      'escalated:delivered': 7,
      'escalated:given_up': 1,
      'escalated:in_digest': 1,
      'reminder:delivered': 3,
      'moved_up:delivered': 2,
      'digest:delivered': 1,
      'final:delivered': 1,
    });
    expect(file.messages.filter((m) => m.attempts > 1).map((m) => `${m.recipient}:${m.event}:${m.attempts}`)).toEqual(['person:ana:escalated:3']);
    // Every held message is carried by a digest to the same person over the same channel.
    for (const held of file.messages.filter((m) => m.state === 'in_digest')) {
      const digest = file.messages.find((m) => m.event === 'digest' && m.recipient === held.recipient && m.channel === held.channel);
      expect(digest?.items).toContain(held.about);
    }
  });

  it(`${written}: every item's receipt verifies, signed with the fixture key; message chains are no part of any`, async () => {
    const key = fixtureSigningKey();
    const keys = new Map([[key.keyId, key.publicKeyPem]]);
    const items = [...chains].filter(([, chain]) => chain[0]!.kind !== 'MESSAGE');
    expect(items.length).toBeGreaterThan(0);
    for (const [effectId, chain] of items) {
      const report = await verifyReceipt(signReceipt(effectId, chain, key), keys);
      expect({ effectId, valid: report.valid, problems: report.problems.map((p) => p.code) }).toEqual({ effectId, valid: true, problems: [] });
    }
  });

  it(`${written}: replayed into a fresh journal, an outbox decides nothing new, and nothing is due`, async () => {
    const channels = new RecordingChannels();
    const views = new Views({ journal: memory, inboxName: 'inbox', nowMs: () => clock.nowMs(), log: { fatal: () => {}, error: () => {} } });
    const outbox = new Outbox({
      journal: memory,
      current: async () => (await views.current()).outbox,
      notifications: file.notifications,
      channels,
      nowMs: () => clock.nowMs(),
      wallMs: () => clock.wallMs(),
      owner: 'replay',
      log: { warn: () => {}, error: () => {} },
    });
    expect(await outbox.plan()).toBe(0);
    expect(await outbox.tick()).toBe(0);
    expect(await outbox.deliverDue()).toBe(0);
    expect(channels.delivered).toEqual([]);
    expect(fixtureText(await scanAll(memory))).toBe(text);
  });

  describe('start-up over it', () => {
    let sandbox: Sandbox;
    beforeAll(async () => {
      sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
    });
    afterAll(async () => {
      await sandbox.close();
    });

    it(`${written}: the server starts over it, recovers nothing, and its outbox decides and sends nothing`, async () => {
      const channels = new RecordingChannels();
      const errors: unknown[] = [];
      const services = createServices({
        config: { ...testConfig(), notifications: file.notifications },
        clock,
        storage: storageOver(database),
        dataDir: join(dir, 'data'),
        stripe: sandbox.stripe(),
        sandbox: true,
        channels,
        onError: (effectId, error) => errors.push([effectId, error]),
        outboxLog: { warn: (_fields, message) => errors.push(message), error: (_fields, message) => errors.push(message) },
      });
      await startServices(services);
      await services.outbox.tick();
      await services.outbox.kick();
      expect(errors).toEqual([]);
      expect(channels.delivered).toEqual([]);
      expect(messageViews(await (await services.views.current()).outbox.history.allMessages())).toEqual(file.messages);
      expect(fixtureText(await scanAll(services.journal))).toBe(text);
    });
  });
});

// Requests that waited their turn for Stripe (day-3 on): bound with no facts, then decided in turn.
describe('requests that waited their turn for Stripe, as day-3 kept them', () => {
  const entries = readFixture(join(FIXTURES, 'day-3.jsonl'));
  it('day-3: three requests were bound with no facts (lease and premises null), and one found no such payment', () => {
    const waited = entries.filter((e) => e.kind === 'PROPOSED' && e.lease === null && e.premises === null);
    expect(waited.map((e) => (e.kind === 'PROPOSED' ? e.request?.id : null))).toEqual(['turn-wait-1', 'turn-person', 'turn-missing']);
    expect(entries.filter((e) => e.kind === 'REFUSED' && e.code === 'payment_missing')).toHaveLength(1);
    // None was escalated for want of a read: the one a person has failed a rule.
    expect(entries.filter((e) => e.kind === 'ESCALATED').map((e) => (e.kind === 'ESCALATED' ? e.reason : null))).toEqual(['needs_judgment']);
  });

  it('day-3: after every entry, the views count as waiting their turn exactly the chains that wait (the bound every process shares)', () => {
    const projection = new InboxProjection('inbox');
    const chains = new Map<string, Entry[]>();
    let most = 0;
    for (const entry of entries) {
      projection.fold(entry);
      chains.set(entry.effect_id, [...(chains.get(entry.effect_id) ?? []), entry]);
      const waiting = [...chains].filter(([, chain]) => waitsItsTurn(chain)).map(([id]) => id);
      expect([...projection.waitingTurn].sort()).toEqual(waiting.sort());
      most = Math.max(most, waiting.length);
    }
    expect(most).toBeGreaterThan(0);
    expect(projection.waitingTurn.size).toBe(0);
  });
});

// Two-approver escalations (day-5 on): a first approval answers nothing, the second by another
// person does, and the send carries both; the refund's beneficiary never approves it.
describe('four-eyes and no self-approval, as day-5 kept them', () => {
  const entries = readFixture(join(FIXTURES, 'day-5.jsonl'));
  const chains = new Map<string, Entry[]>();
  for (const entry of entries) chains.set(entry.effect_id, [...(chains.get(entry.effect_id) ?? []), entry]);
  const byRequest = new Map([...chains.values()].map((chain) => [boundRequest(chain)?.id, chain]));

  it('day-5: each send of a two-approver escalation carries two distinct approvals of it, and none by its beneficiary', () => {
    const sent = ['four-eyes-sent', 'four-eyes-moved'].map((id) => byRequest.get(id)!);
    for (const chain of sent) {
      const { escalation } = latestEscalation(chain);
      const dispatched = chain.find((e) => e.kind === 'DISPATCHED');
      const lease = dispatched?.kind === 'DISPATCHED' ? dispatched.lease : null;
      expect(escalation?.approvals_required).toBe(2);
      const approvers = approvalsOf(chain, escalation!).map((a) => a.by);
      expect(new Set(approvers).size).toBe(2);
      expect(lease).toMatchObject({ by: approvers[1], co_approvals: [{ by: approvers[0] }] });
    }
    expect(approvalsOf(byRequest.get('four-eyes-moved')!, latestEscalation(byRequest.get('four-eyes-moved')!).escalation!).map((a) => a.by)).toEqual(['fm', 'cy']);
    const behalf = byRequest.get('on-behalf')!;
    expect(boundRequest(behalf)?.on_behalf_of).toBe('bea');
    expect(behalf.filter((e) => e.kind === 'DECIDED').map((e) => (e.kind === 'DECIDED' ? e.by : null))).toEqual(['ana']);
  });

  it('day-5: after every entry the views hold each chain in the state its entries give (one approval of two leaves it open)', () => {
    const projection = new InboxProjection('inbox');
    const seen = new Map<string, Entry[]>();
    for (const entry of entries) {
      projection.fold(entry);
      seen.set(entry.effect_id, [...(seen.get(entry.effect_id) ?? []), entry]);
      for (const [id, chain] of seen) expect(summaryState(projection.chains.get(id)!)).toBe(chainState(chain));
    }
    expect(chainState(byRequest.get('four-eyes-open')!)).toBe('ESCALATED');
  });
});

// A config reloaded while running (day-6 on): the reload on its own chain, the approval that
// lapsed with it, and escalations that keep the route they were routed with.
describe('a config reload, as day-6 kept it', () => {
  const entries = readFixture(join(FIXTURES, 'day-6.jsonl'));
  const escalated = entries.filter((e): e is Escalated => e.kind === 'ESCALATED');

  it('day-6: one CONFIG, on the config chain, names bea removed and out of ap-leads; the views fold it and no item holds it', async () => {
    const configs = entries.filter((e): e is ConfigEntry => e.kind === 'CONFIG');
    expect(configs).toEqual([expect.objectContaining({ effect_id: CONFIG_CHAIN_ID, people_removed: ['bea'], people_added: [], left: [{ group: 'ap-leads', name: 'bea' }], joined: [] })]);
    const journal = new MemoryJournal({ wallClockMs: () => Math.max(...entries.map((e) => e.ts_ms)) });
    await load(journal, entries);
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} } });
    const { configReloads, inbox } = await views.current();
    expect(await configReloads.all()).toEqual([expect.objectContaining({ sha256: configs[0]!.sha256, peopleRemoved: ['bea'] })]);
    expect([...inbox.chains.keys()]).not.toContain(CONFIG_CHAIN_ID);
  });

  it('day-6: bea’s approval made before the reload lapsed as approver_removed, and nothing was sent', () => {
    expect(escalated.map((e) => e.reason)).toContain('approver_removed');
    expect(entries.filter((e) => e.kind === 'REFUSED').map((e) => (e.kind === 'REFUSED' ? e.code : null))).toEqual(['lease']);
    expect(entries.filter((e) => e.kind === 'DISPATCHED')).toEqual([]);
  });

  it('day-6: every escalation carries the chain and SLA it was routed with: routed before the route changed, it keeps them; routed again after, it takes the new ones', () => {
    const before = { chain: ['ap-leads', 'finance-manager'], sla_ms: 240 * 60_000 };
    const after = { chain: ['ap-leads', 'controller'], sla_ms: 30 * 60_000 };
    expect(escalated.map((e) => [e.reason, e.group, e.routing])).toEqual([
      ['needs_judgment', 'ap-leads', before],
      ['needs_judgment', 'ap-leads', before],
      ['approver_removed', 'ap-leads', after],
      ['needs_judgment', 'ap-leads', after],
      ['approver_removed', 'controller', after],
      ['needs_judgment', 'controller', after],
    ]);
  });
});

// A config edited while the server was down (day-7 on): the start journals it before anything
// else, compared with the roster the journal named last, and the approval it took away lapses.
describe('a config edited while the server was down, as day-7 kept it', () => {
  const entries = readFixture(join(FIXTURES, 'day-7.jsonl'));
  const configs = entries.filter((e): e is ConfigEntry => e.kind === 'CONFIG');

  it('day-7: three CONFIG entries, each compared with the one before it, and each roster the one before it with who came and went', () => {
    expect(configs.map((c) => [c.cause, c.people_added, c.people_removed])).toEqual([
      ['start', [], []],
      ['start', [], ['bea']],
      ['reload', ['bea'], []],
    ]);
    expect(configs.map((c) => c.compared_with)).toEqual([null, configs[0]!.sha256, configs[1]!.sha256]);
    for (const [before, after] of [[configs[0]!, configs[1]!], [configs[1]!, configs[2]!]] as const) {
      const roster = { people: before.people!, members: before.members! };
      expect(rosterChanges(roster, { people: after.people!, members: after.members! })).toEqual({
        peopleAdded: after.people_added,
        peopleRemoved: after.people_removed,
        joined: after.joined,
        left: after.left,
      });
    }
    // Started again on the file in force, the journal names it: nothing more is journaled.
    const last = configs.at(-1)!;
    expect(decideConfigAtStart(journaledConfig(last), { sha256: last.sha256, roster: { people: last.people!, members: last.members! } })).toEqual({ step: 'none' });
  });

  it('day-7: the start named bea removed before anything else it wrote; her approval lapsed after it, nothing sent', () => {
    const at = (e: Entry) => entries.indexOf(e);
    const refused = entries.filter((e) => e.kind === 'REFUSED');
    expect(refused.map((e) => (e.kind === 'REFUSED' ? e.code : null))).toEqual(['lease']);
    expect(at(refused[0]!)).toBeGreaterThan(at(configs[1]!));
    expect(entries.slice(at(configs[1]!) + 1, at(refused[0]!)).map((e) => e.kind)).toEqual(['PROPOSED']);
    const escalations = entries.filter((e): e is Escalated => e.kind === 'ESCALATED');
    expect(escalations.map((e) => [e.reason, e.routed_to])).toEqual([
      ['needs_judgment', ['ana', 'bea']],
      ['approver_removed', ['ana']],
    ]);
    expect(entries.filter((e) => e.kind === 'DISPATCHED')).toEqual([]);
  });
});
