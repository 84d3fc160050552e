import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PgGrants } from '../../db/pg/grants.ts';
import { openPgPool, type PgClient, type PgPool } from '../../db/pg/pool.ts';
import { latestEscalation } from '../../server/journal/chain.ts';
import { fields, kindsOf } from '../support/db-journals.ts';
import { buildGateWorld, buildProposal, LEASE, ORDER } from '../support/gate-world.ts';
import { buildInboxWorld } from '../support/inbox-world.ts';
import { HeldPgJournal, lockWaitOrSettled, PgChecksLastRead, PgGrantsReadOnce, stopPoint } from '../support/pg-races.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';

// Two servers racing on one PostgreSQL database, each with its own pool: one holds its write
// transaction open at a chosen point while the other runs, and each case checks that the other
// waits where it must, and what both answer once it goes on. Where a store with a bug would let
// the race through, the same case runs on it and must fail.

const available = postgresOrSkip('the PostgreSQL race tests (test/db/pg-sql-races.test.ts)');

type JournalClass = typeof HeldPgJournal;
type GrantsClass = typeof PgGrants;

/** The database of one case: journals and grants as two servers open them, and a pool to watch it with. */
interface Servers {
  journal(kind?: JournalClass): HeldPgJournal;
  grants(kind?: GrantsClass): PgGrants;
  /** A client of a new pool, as another server's connection. */
  connect(): Promise<PgClient>;
  observer: PgPool;
  owner: PgPool;
}

let template: PgDatabase | undefined;
let database: PgDatabase | null = null;
const pools: PgPool[] = [];
const clock = { wallMs: 1_700_000_000_000 };

function pool(url: string): PgPool {
  const opened = openPgPool({ url, max: 4 });
  pools.push(opened);
  return opened;
}

function servers(): Servers {
  if (database === null) throw new Error('no database for this case');
  const { appUrl, ownerUrl } = database;
  return {
    journal: (Kind = HeldPgJournal) => new Kind({ pool: pool(appUrl), wallClockMs: () => clock.wallMs }),
    grants: (Kind = PgGrants) => new Kind({ pool: pool(appUrl), nowMs: () => clock.wallMs }),
    connect: () => pool(appUrl).connect(),
    observer: pool(appUrl),
    owner: pool(ownerUrl),
  };
}

/** A person's reject on one server, racing the approval and send on the other. */
async function rejectRacingTheSend(s: Servers, rejecter: JournalClass): Promise<void> {
  const [a, b] = [s.journal(), s.journal(rejecter)];
  const world = buildInboxWorld({ journal: a });
  const onB = world.newInbox(b);
  const r = world.request(300);
  expect(await world.inbox.submit(r)).toBe('QUEUED');
  const id = world.effectIdOf(r);
  // B reads the item while it still waits for a person.
  const read = b.holdRead();
  const rejecting = onB.reject(id, 'cy');
  await read.reached;
  // A approves it and writes its DISPATCHED; its transaction stays open.
  const send = a.holdWrite('DISPATCHED');
  const approving = world.inbox.approve(id, 'cy');
  await send.reached;
  read.release();
  expect(await lockWaitOrSettled(s.observer, rejecting)).toBe('waiting');
  send.release();
  expect(await approving).toBe('COMMITTED');
  expect(await rejecting).toBe('ALREADY_DECIDED');
  const chain = await b.entries(id);
  expect(chain.filter((e) => e.kind === 'DECIDED').map((e) => e.decision)).toEqual(['approve']);
  expect(world.target.refundedTotal(r.order as string)).toBe(300);
}

/** Two servers submit one request with different amounts while the first holds its PROPOSED open. */
async function submitsRacing(s: Servers, second: JournalClass): Promise<void> {
  const [a, b] = [s.journal(), s.journal(second)];
  const world = buildGateWorld({ journal: a });
  const gateB = world.newGate({ journal: b });
  const proposing = a.holdWrite('PROPOSED');
  const first = world.gate.submit(buildProposal(world));
  await proposing.reached;
  const other = gateB.submit(buildProposal(world, { amountCents: 3_000 }));
  expect(await lockWaitOrSettled(s.observer, other)).toBe('waiting');
  proposing.release();
  expect([(await first).status, (await other).status]).toEqual(['COMMITTED', 'REFUSED:conflicting_payload']);
  expect(await kindsOf(b, (await first).effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  expect(world.target.refundedTotal(ORDER)).toBe(2_000);
}

/** A revoke on server B committed while server A checks the send, before its DISPATCHED. */
async function revokeWhileChecked(s: Servers, checker: GrantsClass): Promise<void> {
  const [grantsA, grantsB] = [s.grants(checker), s.grants()];
  await grantsB.grant(LEASE);
  const world = buildGateWorld({ journal: s.journal() });
  const stop = stopPoint();
  const gateA = world.newGate({ leases: grantsA, killHook: (point) => (point === 'before_dispatch' ? stop.arrive() : undefined) });
  const sending = gateA.submit(buildProposal(world));
  await stop.reached;
  expect(await grantsB.revoke(LEASE)).toBe(true);
  stop.release();
  const { status, effectId } = await sending;
  expect(status).toBe('REFUSED:lease');
  const chain = await world.journal.entries(effectId);
  expect(chain.map((e) => e.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'REFUSED']);
  expect(chain.at(-1)).toMatchObject({ code: 'lease', checks: { lease_live: false, lease: { lease_id: LEASE, revoked: clock.wallMs } } });
  expect(world.target.refunds).toEqual([]);
}

/** Raw rows of entries, as a server with a bug or a hand with SQL would write them. */
const INSERT = 'INSERT INTO entries (seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES ($1, $2, $3, $4, $5, 0, 1, $6, NULL)';

/** Two transactions on two pools each write after one entry, then each a COMMITTED: the second waits for the first, and fails. */
async function forksRacing(s: Servers): Promise<void> {
  const journal = s.journal();
  const eid = '0000000000a1';
  const first = await journal.append('PROPOSED', eid, fields('PROPOSED'));
  const [one, two] = await Promise.all([s.connect(), s.connect()]);
  try {
    for (const [kind, prevOne, prevTwo, guard] of [
      ['AUTHORIZED', first.hash, first.hash, /entries_no_fork/],
      ['COMMITTED', 'f'.repeat(64), 'e'.repeat(64), /entries_one_committed/],
    ] as const) {
      const seq = kind === 'COMMITTED' ? 300 : 100;
      await one.query('BEGIN');
      await one.query(INSERT, [seq, eid, kind, prevOne, kind === 'COMMITTED' ? 'c'.repeat(64) : 'f'.repeat(64), '{}']);
      await two.query('BEGIN');
      const racing = two.query(INSERT, [seq + 1, eid, kind, prevTwo, kind === 'COMMITTED' ? 'd'.repeat(64) : 'e'.repeat(64), '{}']);
      racing.catch(() => {});
      expect(await lockWaitOrSettled(s.observer, racing)).toBe('waiting');
      await one.query('COMMIT');
      await expect(racing).rejects.toThrow(guard);
      await two.query('ROLLBACK');
    }
    expect((await s.observer.query('SELECT kind FROM entries WHERE effect_id = $1 ORDER BY seq', [eid])).rows.map((r) => r.kind)).toEqual([
      'PROPOSED',
      'AUTHORIZED',
      'COMMITTED',
    ]);
  } finally {
    await Promise.all([one.query('ROLLBACK').catch(() => {}), two.query('ROLLBACK').catch(() => {})]);
    one.release();
    two.release();
  }
}

describe.skipIf(!available)('two servers racing on one PostgreSQL database', () => {
  beforeAll(async () => {
    template = await freshPgDatabase('races_template');
  });
  afterAll(async () => {
    if (template !== undefined) await dropPgDatabase(template);
  });
  beforeEach(async () => {
    database = await copyPgDatabase(template!, 'races_case');
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.end()));
    if (database !== null) await dropPgDatabase(database);
    database = null;
  });

  it('a reject on one server first: the approval on the other is ALREADY_DECIDED, a send of the item is REFUSED:closed, nothing is sent', async () => {
    const s = servers();
    const [a, b] = [s.journal(), s.journal()];
    const world = buildInboxWorld({ journal: a });
    const onB = world.newInbox(b);
    const r = world.request(300);
    expect(await world.inbox.submit(r)).toBe('QUEUED');
    const id = world.effectIdOf(r);
    expect(await onB.reject(id, 'cy')).toBe('REJECTED');
    expect(await world.inbox.approve(id, 'cy')).toBe('ALREADY_DECIDED');
    const { escalation } = latestEscalation(await a.entries(id));
    const lease = { by: 'cy', at_ms: world.clock.nowMs, group: escalation!.group, escalation: escalation!.hash };
    const effect = { order: r.order as string, amount: 300 };
    const sent = await world.inbox.options.gate.submit({ agent: 'cy', lease, requestKey: r.id as string, premises: escalation!.facts, effect });
    expect(sent).toEqual({ effectId: id, status: 'REFUSED:closed' });
    expect(world.target.refunds).toEqual([]);
  });

  it('a reject that read the item before the approval waits for the send’s open transaction, then is ALREADY_DECIDED: sent once, no reject recorded', async () => {
    await rejectRacingTheSend(servers(), HeldPgJournal);
  });

  it('two submits of one request with different amounts: the second waits for the first’s PROPOSED, then is REFUSED:conflicting_payload with nothing written', async () => {
    await submitsRacing(servers(), HeldPgJournal);
  });

  it('a revoke committed on another server while the send is checked: the dispatch reads the grant again and refuses, nothing sent', async () => {
    await revokeWhileChecked(servers(), PgGrants);
  });

  it('a revoke during the dispatch’s open transaction does not wait for it: the send goes out once on the grant it read, the revoke refuses every later send, and the journal names the effect sent under the grant', async () => {
    const s = servers();
    const [grantsA, grantsB] = [s.grants(), s.grants()];
    await grantsA.grant(LEASE);
    const a = s.journal();
    const world = buildGateWorld({ journal: a });
    const gateA = world.newGate({ leases: grantsA });
    const gateB = world.newGate({ leases: grantsB, journal: s.journal() });
    const dispatching = a.holdWrite('DISPATCHED');
    const sending = gateA.submit(buildProposal(world));
    await dispatching.reached;
    const revoking = grantsB.revoke(LEASE);
    expect(await lockWaitOrSettled(s.observer, revoking)).toBe('settled');
    expect(await revoking).toBe(true);
    dispatching.release();
    const { status, effectId } = await sending;
    expect(status).toBe('COMMITTED');
    const dispatched = (await a.entries(effectId)).find((e) => e.kind === 'DISPATCHED');
    expect(dispatched).toMatchObject({ checks: { lease_live: true, lease: { lease_id: LEASE, revoked: null } } });
    expect((await gateB.submit(buildProposal(world, { requestKey: 'case-4472' }))).status).toBe('REFUSED:lease');
    const sentUnder = (await a.scan(0, 100)).filter(({ entry }) => entry.kind === 'DISPATCHED' && entry.lease === LEASE).map(({ entry }) => entry.effect_id);
    expect(sentUnder).toEqual([effectId]);
    expect(world.target.refundedTotal(ORDER)).toBe(2_000);
  });

  it('a send and a revoke racing freely, 20 rounds: each send is either refused with the grant recorded revoked, or sent once with it recorded live; never sent on a revoked one', async () => {
    const s = servers();
    const [grantsA, grantsB] = [s.grants(), s.grants()];
    const world = buildGateWorld({ journal: s.journal() });
    const gateA = world.newGate({ leases: grantsA });
    let sentCents = 0;
    for (let round = 0; round < 20; round++) {
      await grantsA.grant(LEASE);
      const proposal = buildProposal(world, { requestKey: `race-${round}`, amountCents: 100 });
      // The revoke starts a little later each round, so it lands before, between and after the send's reads of the grant.
      const revokeLater = new Promise<boolean>((resolve, reject) => setTimeout(() => grantsB.revoke(LEASE).then(resolve, reject), round * 2));
      const [sent, revoked] = await Promise.all([gateA.submit(proposal), revokeLater]);
      expect(revoked).toBe(true);
      const chain = await world.journal.entries(sent.effectId);
      const dispatched = chain.find((e) => e.kind === 'DISPATCHED');
      if (sent.status === 'COMMITTED') {
        expect(dispatched).toMatchObject({ checks: { lease_live: true, lease: { lease_id: LEASE, revoked: null } } });
        sentCents += 100;
      } else {
        expect(sent.status).toBe('REFUSED:lease');
        expect(dispatched).toBeUndefined();
        expect(chain.at(-1)).toMatchObject({ kind: 'REFUSED', checks: { lease_live: false, lease: { lease_id: LEASE, revoked: clock.wallMs } } });
      }
    }
    expect(world.target.refundedTotal(ORDER)).toBe(sentCents);
  });

  it('two transactions writing after one entry, or each a COMMITTED: the second waits for the first and fails on the guard when it commits', async () => {
    await forksRacing(servers());
  });

  describe('fail on a store with the bug each race exposes', () => {
    it.fails('a server checking the chain it last read, not the one under the lock: its reject is recorded on a sent refund', async () => {
      await rejectRacingTheSend(servers(), PgChecksLastRead);
    });
    it.fails('a server checking the chain it last read: both submits are bound', async () => {
      await submitsRacing(servers(), PgChecksLastRead);
    });
    it.fails('grants a server read once and kept: the revoked grant is still live to it at dispatch', async () => {
      await revokeWhileChecked(servers(), PgGrantsReadOnce);
    });
    it.fails('a database without the fork and one-COMMITTED guards: both transactions commit', async () => {
      const s = servers();
      await s.owner.query('DROP INDEX entries_no_fork; DROP INDEX entries_one_committed');
      await forksRacing(s);
    });
  });
});
