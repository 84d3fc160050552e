import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgJournal } from '../../db/pg/journal.ts';
import { openPgPool, type PgPool } from '../../db/pg/pool.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { workLeaseLimits } from '../../server/app/work-leases.ts';
import { parsePublicKeySet } from '../../server/receipts/keys.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { rebuildViews } from '../../server/views/rebuild.ts';
import { type SandboxProcess, startSandboxProcess, stopCrashProcesses } from '../support/crash-harness.ts';
import { FaultWorld } from '../support/pg-fault-world.ts';
import { dropPgDatabase, emptyPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';

// Three real servers on one PostgreSQL database, each through a TCP proxy of its own, one sandbox
// process that outlives them, and an agent's refunds spread over them (routine ones, and ones over
// the limit that approvers decide on another server than the one asked). One server's application
// clock runs 2 s ahead. With traffic running, in order: a server dies by SIGKILL in the middle of
// a send (after Stripe took it, before COMMITTED) and starts again; the server holding the SLA
// ticker's lease is killed as its tick moves items up their chain, and starts again; PostgreSQL
// itself restarts; one server's network to it goes silent for 30 s. Afterwards the sandbox holds
// exactly the refunds the journal committed, each SLA step was written once, every receipt
// verifies, and the servers agree on the derived tables at one seq.

const available = postgresOrSkip('the servers under faults (test/db/pg-fault-proof.test.ts)');

/** Server 2's application clock runs this far ahead of the others'. */
const SKEW_MS = 2_000;
/** The default route's SLA: after it an item moves from ap-leads to finance-manager. */
const SLA_MS = 240 * 60_000;
/** How long one server's network is silent. */
const CUT_MS = 30_000;

describe.skipIf(!available)('three servers on one PostgreSQL database, under faults (real processes)', () => {
  let database: PgDatabase;
  let dir: string;
  let sandbox: SandboxProcess;
  let world: FaultWorld;
  let reader: PgPool;

  beforeAll(async () => {
    database = await emptyPgDatabase('fault_proof');
    dir = mkdtempSync(join(tmpdir(), 'interlock-pg-fault-'));
    sandbox = await startSandboxProcess();
    world = new FaultWorld(await postgresCluster(), database, sandbox);
    await world.prepare(dir, 3, [0, 0, SKEW_MS]);
    // Server 0 dies by its own SIGKILL at its first send, once Stripe took it.
    await world.start(0, { INTERLOCK_KILL_AT: 'after_send' });
    await Promise.all([world.start(1), world.start(2)]);
    reader = openPgPool({ url: database.appUrl, max: 2 });
  }, 120_000);

  afterAll(async () => {
    await world?.close();
    await reader?.end();
    await stopCrashProcesses();
    if (database !== undefined) await dropPgDatabase(database);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** Agent traffic on the running servers among `on()`, a refund every 150 ms (one in four escalated), until stopped. */
  const traffic = (on: () => number[]) => {
    let running = true;
    let turn = 0;
    const done = (async () => {
      while (running) {
        const up = on().filter((i) => world.servers[i] !== null);
        if (up.length > 0) {
          turn += 1;
          await world.ask(up[turn % up.length]!, turn % 4 === 0);
        }
        await sleep(150);
      }
    })();
    return async () => {
      running = false;
      await done;
    };
  };

  const escalatedEntries = async (effectIds: string[]) =>
    (await reader.query<{ effect_id: string; body: string }>("SELECT effect_id, body FROM entries WHERE kind = 'ESCALATED' AND effect_id = ANY($1) ORDER BY seq", [effectIds])).rows.map((row) => ({
      effectId: row.effect_id,
      ...(JSON.parse(row.body) as { level: number; breach: boolean }),
    }));

  const readyAll = async () => Promise.all([0, 1, 2].map(async (i) => (await world.call(i, 'GET', '/readyz', {}))?.status ?? 0));

  it('keeps every refund exactly once, each SLA step once, and answers within bounds, through kills, a PostgreSQL restart and a cut', async () => {
    const figures: Record<string, number> = {};
    // Phase 1: traffic on servers 1 and 2; escalated items approved on the other one.
    let stop = traffic(() => [1, 2]);
    await sleep(3_000);
    for (const asked of world.asked.filter((a) => a.escalated && a.effectId !== null).slice(0, 2)) {
      expect(await world.approve(asked, asked.server === 1 ? 2 : 1)).toBe(200);
    }

    // Phase 2: server 0 dies in the middle of its sends, and starts again on the same database.
    await Promise.all([0, 0, 0].map(() => world.ask(0, false)));
    expect(await world.servers[0]!.exited).toBe('SIGKILL');
    world.servers[0] = null;
    await world.start(0);
    await stop();
    stop = traffic(() => [0, 1, 2]);

    // Phase 3: items escalated just before every clock is moved to 5 s short of their SLA (3 s on the server ahead).
    // Each asked again while unanswered, as an agent does, for as long again as the product promises
    // an answer within (10 s): nine at once beside the traffic, on a loaded machine, left one
    // server's answers later than the agent's wait. One that still has none fails here, with each
    // request's last answer and the end of its server's log.
    const slaItems = await Promise.all(
      [0, 1, 2, 0, 1, 2, 0, 1, 2].map(async (i) => {
        const asked = await world.ask(i, true);
        await world.untilAnswered(asked, i);
        return asked;
      }),
    );
    const unanswered = slaItems.filter((a) => a.effectId === null || a.status !== 'QUEUED');
    const tailOf = (i: number) => `${world.servers[i]?.stderr() ?? ''}${world.servers[i]?.stdout() ?? ''}`.trim().split('\n').slice(-8).join('\n');
    expect(
      unanswered.map((a) => `${a.id} on server ${a.server}: ${a.status} (last answer: ${world.lastAnswer.get(a.id)})`),
      [...new Set(unanswered.map((a) => a.server))].map((i) => `server ${i}:\n${tailOf(i)}`).join('\n'),
    ).toEqual([]);
    const undecided = () => world.asked.filter((a) => a.escalated && !a.decided && a.effectId !== null);
    const dueSoon = undecided().map((a) => a.effectId!);
    // One after the other: ana logs in once, at the first (logins of one person at once left some sessions refused).
    for (const i of [0, 1, 2]) expect((await world.as(i, 'ana', 'POST', '/api/test/clock', { advance_ms: SLA_MS - 5_000 }))?.status).toBe(200);
    const slaIds = slaItems.map((a) => a.effectId!);
    // The server holding the SLA ticker's lease is killed as soon as its tick wrote the first step.
    let stepsBefore = 0;
    // Within the lease's TTL and a retry past the 5 s: the lease may still be the server killed in phase 2's.
    const stepWithinMs = workLeaseLimits.ttlMs + workLeaseLimits.retryMs + 7_000;
    for (const startedMs = Date.now(); stepsBefore === 0 && Date.now() - startedMs < stepWithinMs; await sleep(10)) {
      stepsBefore = (await escalatedEntries(slaIds)).filter((e) => e.breach).length;
    }
    expect(stepsBefore, `no SLA step within ${stepWithinMs} ms`).toBeGreaterThan(0);
    const holder = (await reader.query<{ holder: string }>("SELECT holder FROM work_leases WHERE name = 'sla-ticker'")).rows[0]!.holder;
    const ticking = world.indexOfPid(Number(holder.split(':').at(-2)));
    expect(ticking).toBeGreaterThanOrEqual(0);
    await world.kill(ticking);
    figures.stepsWhenKilled = (await escalatedEntries(slaIds)).filter((e) => e.breach).length;
    await world.start(ticking);

    // Phase 4: PostgreSQL restarts. An agent asking meanwhile is told 503 at once, and every server is ready soon after.
    const outage = { status: 0, code: undefined as unknown, retryAfter: null as string | null, ms: Number.POSITIVE_INFINITY };
    const outagePi = (await sandbox.remote.createPaymentIntent(10_000)).id;
    const { upAtMs } = await world.cluster.restart(async () => {
      const startedMs = performance.now();
      const answer = await world.agent(1, 'POST', '/v1/refunds', { request_id: 'during-outage', payment_intent: outagePi, amount: 100 });
      Object.assign(outage, { status: answer?.status ?? 0, code: (answer?.body.error as { code?: string } | undefined)?.code, retryAfter: answer?.headers.get('retry-after') ?? null, ms: performance.now() - startedMs });
    });
    const logOf = (i: number) => `${world.servers[i]?.stderr() ?? ''}${world.servers[i]?.stdout() ?? ''}`.trim().split('\n').slice(-12).join('\n');
    expect(outage, `server 1 during the outage:\n${logOf(1)}`).toMatchObject({ status: 503, code: 'journal_unavailable' });
    expect(outage.retryAfter).not.toBeNull();
    // Answered, not hung: 117 to 144 ms in four runs on a loaded 2-core machine, but 1,020 and
    // 1,142 ms in two others (where that second goes is not yet found), so the bound is 2 s.
    expect(outage.ms).toBeLessThan(2_000);
    figures.outageAnswerMs = Math.round(outage.ms);
    while ((await readyAll()).some((status) => status !== 200) && Date.now() - upAtMs < 15_000) await sleep(100);
    figures.readyAfterMs = Date.now() - upAtMs;
    // A server not ready says why: whether it still runs, and the end of its log.
    const notReady = (await readyAll()).flatMap((status, i) => {
      if (status === 200) return [];
      const server = world.servers[i];
      return [`server ${i}: /readyz ${status}, ${server?.child.exitCode === null ? 'running' : `ended ${server?.child.exitCode ?? 'before'}`}:\n${logOf(i)}`];
    });
    expect(notReady).toEqual([]);
    expect(figures.readyAfterMs).toBeLessThan(10_000);

    // Phase 5: server 1's network to PostgreSQL goes silent for 30 s; the other two keep committing.
    await stop();
    stop = traffic(() => [0, 2]);
    const askedBeforeCut = world.asked.length;
    world.proxies[1]!.silence();
    await sleep(CUT_MS);
    world.proxies[1]!.restore();
    await stop();
    const duringCut = world.asked.slice(askedBeforeCut).filter((a) => !a.escalated);
    figures.routineDuringCut = duringCut.length;
    figures.committedDuringCut = duringCut.filter((a) => a.status?.startsWith('COMMITTED')).length;
    expect(figures.committedDuringCut).toBeGreaterThanOrEqual(duringCut.length / 2);
    for (const startedMs = Date.now(); (await readyAll()).some((s) => s !== 200) && Date.now() - startedMs < 20_000; ) await sleep(200);
    expect(await readyAll()).toEqual([200, 200, 200]);

    // Every SLA step due was written once: each item undecided when its SLA passed moved up exactly once.
    const steps = await escalatedEntries([...dueSoon, ...slaIds]);
    for (const effectId of new Set([...dueSoon, ...slaIds])) {
      const moved = steps.filter((e) => e.effectId === effectId && e.breach).map((e) => e.level);
      expect(moved, effectId).toEqual([1]);
    }

    // Drain: every request asked again until final, every escalated one approved on another server.
    await settle();
    await checkLedger();
    await checkReceipts();
    await checkDerived();
    console.log(`pg fault proof figures: ${JSON.stringify(figures)}`);
  }, 150_000);

  /** Ask each request again until its answer is final, approving escalated ones on a server other than the one asked. */
  async function settle(): Promise<void> {
    const deadline = Date.now() + 30_000;
    // Each request is asked after by its own agent, beside the others (one after the other, 25 open
    // requests took 48 s of a loaded run's 150 s); the approvers log in first, one at a time, as
    // logins of one person at once left some sessions refused.
    for (const name of ['ana', 'fm']) await world.as(0, name, 'GET', '/readyz');
    for (;;) {
      const open = world.asked.filter((a) => a.status === null || ['QUEUED', 'IN_FLIGHT', 'APPROVED', 'AMBIGUOUS'].includes(a.status));
      if (open.length === 0 || Date.now() > deadline) break;
      await Promise.all(
        open.map(async (asked) => {
          const other = (asked.server + 1) % 3;
          if (asked.effectId === null) await world.askAgain(asked, other);
          else if (asked.status === 'QUEUED' && asked.escalated) await world.approve(asked, other);
          await world.status(asked, other);
        }),
      );
      await sleep(300);
    }
    const open = world.asked.filter((a) => !a.status?.startsWith('COMMITTED') && a.status !== 'REAPPLIED_AFTER_QUERY');
    expect(open.map((a) => `${a.id} ${a.status}`)).toEqual([]);
  }

  /** The sandbox holds exactly the refunds the journal committed, by payment and amount; nothing sent twice. */
  async function checkLedger(): Promise<void> {
    const committed = new Set((await reader.query<{ effect_id: string }>("SELECT DISTINCT effect_id FROM entries WHERE kind = 'COMMITTED' ORDER BY effect_id")).rows.map((r) => r.effect_id));
    const ambiguous = (await reader.query<{ n: number }>("SELECT count(*)::int8 AS n FROM entries WHERE kind = 'AMBIGUOUS'")).rows[0]!.n;
    expect(ambiguous, 'an AMBIGUOUS was written where a lookup resolves it').toBe(0);
    const refunds = await sandbox.remote.refunds();
    const byPayment = new Map<string, number[]>();
    for (const refund of refunds) byPayment.set(String(refund.payment_intent), [...(byPayment.get(String(refund.payment_intent)) ?? []), refund.amount]);
    const askedPis = new Set(world.asked.map((a) => a.pi));
    expect([...byPayment.keys()].filter((pi) => !askedPis.has(pi))).toEqual([]);
    for (const asked of world.asked) {
      expect(byPayment.get(asked.pi) ?? [], asked.id).toEqual(committed.has(asked.effectId!) ? [asked.amount] : []);
    }
    expect(committed.size).toBe(world.asked.length);
  }

  /** Every committed refund's receipt, from a server, verifies against the keys the servers publish. */
  async function checkReceipts(): Promise<void> {
    const keys = parsePublicKeySet((await world.call(0, 'GET', '/.well-known/interlock-keys', {}))!.body);
    for (const asked of world.asked) {
      const receipt = await world.agent(asked.server, 'GET', `/v1/receipts/${asked.effectId}`);
      expect(receipt?.status, asked.id).toBe(200);
      const report = await verifyReceipt(receipt!.body, keys);
      expect(report.valid, `${asked.id}: ${JSON.stringify(report)}`).toBe(true);
    }
  }

  /** The derived tables, at the journal's head, hold what a rebuild from the journal gives, and the servers tell the same ledger. */
  async function checkDerived(): Promise<void> {
    expect(await readyAll()).toEqual([200, 200, 200]);
    // Confirmations still on their way would land between the three reads.
    await sandbox.remote.webhooksIdle();
    // One after the other: fin logs in once, at the first.
    const ledgers: string[] = [];
    for (const i of [0, 1, 2]) ledgers.push(JSON.stringify((await world.as(i, 'fin', 'GET', '/api/ledger?limit=200'))?.body));
    // Where they differ, the rows that do, as each server tells them.
    const rowsOf = (text: string) => new Map(((JSON.parse(text) as { rows?: Array<{ request_id: string }> }).rows ?? []).map((row) => [row.request_id, JSON.stringify(row)]));
    const [first, ...rest] = ledgers.map(rowsOf);
    for (const [i, other] of rest.entries()) {
      const differing = [...new Set([...first!.keys(), ...other.keys()])].filter((id) => first!.get(id) !== other.get(id));
      expect(differing.map((id) => `${id}: server 0 ${first!.get(id)} / server ${i + 1} ${other.get(id)}`)).toEqual([]);
    }
    const seqs = async () => (await reader.query<{ head: number; cursor: number }>('SELECT h.seq AS head, c.seq AS cursor FROM journal_head h, derived_cursor c')).rows[0]!;
    // The tables are written behind the views' catch-up: at most a moment behind the head.
    for (const startedMs = Date.now(); (await seqs()).cursor !== (await seqs()).head && Date.now() - startedMs < 5_000; ) await sleep(100);
    const { head, cursor } = await seqs();
    expect(cursor).toBe(head);
    const stored = (await reader.query<{ view: string; sum: string; rows: number }>('SELECT view, sum, rows FROM derived_digests ORDER BY view')).rows;
    const rebuilt = await rebuildViews({ journal: new PgJournal({ pool: reader, wallClockMs: Date.now }), tables: new MemoryDerivedTables(), inboxName: 'inbox' });
    expect(rebuilt.seq).toBe(head);
    expect(stored.map((d) => ({ view: d.view, sum: d.sum, rows: d.rows }))).toEqual(rebuilt.digests.map((d) => ({ view: d.view, sum: d.sum, rows: d.rows })));
  }
});

