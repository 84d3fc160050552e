import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Head, PgJournal, type PgTx } from '../../db/pg/journal.ts';
import { openPgPool, type PgPool } from '../../db/pg/pool.ts';
import { StoreCommitUnknownError } from '../../db/port/errors.ts';
import type { ClaimRow } from '../../db/journal-rules.ts';
import type { AppendIfResult, ChainCheck, ClaimRequest, ReservationGuard } from '../../server/journal/store.ts';
import type { EntryKind, FieldsOf } from '../../shared/entries.ts';
import { kindsOf } from '../support/db-journals.ts';
import { buildGateWorld, buildProposal, type GateWorld } from '../support/gate-world.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';

// The gate on a PostgreSQL journal whose DISPATCHED may or may not have committed (the connection
// was lost at its COMMIT: StoreCommitUnknownError). Nothing is sent on it: the submit fails, and the
// next step (the agent's retry, then recovery) reads the effect's chain again, finds the DISPATCHED
// or writes it, and Stripe is asked for the refund once.

const available = postgresOrSkip('the gate on an unknown DISPATCHED (test/db/pg-dispatch-unknown.test.ts)');

/** Closes its connection's socket right before the COMMIT of the first DISPATCHED is sent: the server rolls it back. */
class LosingTheConnectionAtDispatchCommit extends PgJournal {
  cuts = 1;
  readonly #dispatching = new WeakSet<PgTx>();

  /** A claim is written with a DISPATCHED, in its transaction. */
  protected override async putClaim(tx: PgTx, claim: ClaimRow): Promise<void> {
    await super.putClaim(tx, claim);
    this.#dispatching.add(tx);
  }

  protected override async moveHead(tx: PgTx, from: Head): Promise<void> {
    await super.moveHead(tx, from);
    if (!this.#dispatching.has(tx) || this.cuts === 0) return;
    this.cuts -= 1;
    (tx.client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  }
}

/** Commits the first DISPATCHED, then answers StoreCommitUnknownError, as a connection lost while COMMIT was answered. */
class LosingTheAnswerToDispatchCommit extends PgJournal {
  cuts = 1;

  override async appendIf<K extends EntryKind>(
    kind: K,
    effectId: string,
    check: ChainCheck,
    fields: FieldsOf<K>,
    claim?: ClaimRequest,
    guard?: ReservationGuard,
  ): Promise<AppendIfResult<K>> {
    const result = await super.appendIf(kind, effectId, check, fields, claim, guard);
    if (kind !== 'DISPATCHED' || result.blocker !== null || this.cuts === 0) return result;
    this.cuts -= 1;
    throw new StoreCommitUnknownError('the connection was lost while COMMIT was answered');
  }
}

const CLAIM_TTL_MS = 1_000;

describe.skipIf(!available)('the gate on PostgreSQL, when the commit of a DISPATCHED is unknown', () => {
  let template: PgDatabase | undefined;
  const made: PgDatabase[] = [];
  const pools: PgPool[] = [];
  beforeAll(async () => {
    template = await freshPgDatabase('dispatch_unknown_template');
  });
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    for (const database of [...made, ...(template ? [template] : [])]) await dropPgDatabase(database);
  });

  /** A gate world on a fresh copy of the database, its journal of class `Journal`, every apply counted as a create sent to Stripe. */
  async function worldOn(Journal: typeof PgJournal): Promise<{ world: GateWorld; creates: string[] }> {
    const database = await copyPgDatabase(template!, 'dispatch_unknown');
    made.push(database);
    const pool = openPgPool({ url: database.appUrl, max: 2 });
    pools.push(pool);
    let clock = { wallMs: 1_700_000_000_000 };
    const world = buildGateWorld({ journal: new Journal({ pool, wallClockMs: () => clock.wallMs }), claimTtlMs: CLAIM_TTL_MS });
    clock = world.clock;
    const creates: string[] = [];
    const apply = world.target.apply.bind(world.target);
    world.target.apply = (effectId, effect) => {
      creates.push(effectId);
      return apply(effectId, effect);
    };
    return { world, creates };
  }

  it('lost before it committed: nothing is sent; the retry reads the chain, writes the DISPATCHED and sends once', async () => {
    const { world, creates } = await worldOn(LosingTheConnectionAtDispatchCommit);
    const proposal = buildProposal(world);
    const effectId = world.gate.effectIdOf(proposal);
    await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(StoreCommitUnknownError);
    expect(creates).toEqual([]);
    expect(await kindsOf(world.journal, effectId)).not.toContain('DISPATCHED');
    expect(await world.gate.submit(proposal)).toMatchObject({ status: 'COMMITTED' });
    expect(creates).toEqual([effectId]);
    const kinds = await kindsOf(world.journal, effectId);
    expect(kinds.filter((kind) => kind === 'DISPATCHED')).toHaveLength(1);
    expect(kinds.at(-1)).toBe('COMMITTED');
    expect(world.target.refunds).toHaveLength(1);
  });

  it('committed with its answer lost: nothing is sent; the retry finds the open DISPATCHED, and recovery sends it once', async () => {
    const { world, creates } = await worldOn(LosingTheAnswerToDispatchCommit);
    const proposal = buildProposal(world);
    const effectId = world.gate.effectIdOf(proposal);
    await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(StoreCommitUnknownError);
    expect(creates).toEqual([]);
    expect((await kindsOf(world.journal, effectId)).at(-1)).toBe('DISPATCHED');
    // The agent's retry reads the chain again: the dispatch is open, so it answers and sends nothing.
    expect(await world.gate.submit(proposal)).toMatchObject({ status: 'IN_FLIGHT' });
    expect(creates).toEqual([]);
    // Once the sender's claim lapsed, recovery reads the chain under a claim of its own and sends it, under its key.
    world.clock.wallMs += CLAIM_TTL_MS + 1;
    expect([...(await world.gate.recover())]).toEqual([[effectId, 'COMMITTED_BY_RETRY']]);
    expect(creates).toEqual([effectId]);
    const kinds = await kindsOf(world.journal, effectId);
    expect(kinds.filter((kind) => kind === 'DISPATCHED')).toHaveLength(1);
    expect(kinds.at(-1)).toBe('COMMITTED');
    expect(world.target.refunds).toHaveLength(1);
  });
});
