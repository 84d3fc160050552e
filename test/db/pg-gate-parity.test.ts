import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { PgJournal } from '../../db/pg/journal.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import type { StorageJournal } from '../../db/port/journal.ts';
import { FAULTS, type Fault, playFault } from '../../experiments/refund-agent.ts';
import type { Proposal } from '../../server/gate/gate.ts';
import type { Tier } from '../../server/gate/target.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { signReceipt } from '../../server/receipts/receipts.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import type { JsonObject } from '../../shared/json.ts';
import { buildChain, committedSteps, EFFECT_ID, LEASE, liveChecks } from '../support/entries.ts';
import { buildGateWorld, ORDER } from '../support/gate-world.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';

// The gate (the decision pipeline every refund route goes through) answers the same on the
// PostgreSQL journal as on SQLite: each fault of the refund_agent experiment, at each tier, played
// on both from a fresh journal, gives the same answer, the same refunds and the same journal,
// entry for entry (the wall clock is the world's, so even the hashes and seals agree).

const available = postgresOrSkip('the PostgreSQL gate parity (test/db/pg-gate-parity.test.ts)');

const TIERS: readonly Tier[] = [1, 2, 3];

/** A fresh journal of one store on the world's clock (on PostgreSQL, of the class given), and how to let it go. */
type JournalMaker = (wallClockMs: () => number, Journal?: typeof PgJournal) => Promise<{ journal: StorageJournal; close(): Promise<void> }>;

/** What one play of a fault came to: the answer, the refunds and every entry of the journal in order. */
interface Played {
  outcome: string;
  refundedCents: number;
  refunds: number;
  entries: JsonObject[];
  head: unknown;
}

async function playOn(make: JournalMaker, fault: Fault, tier: Tier): Promise<Played> {
  // One clock for the world and its journal, as one server has: the world's, once it is built.
  let clock = { wallMs: 1_700_000_000_000 };
  const { journal, close } = await make(() => clock.wallMs);
  try {
    const world = buildGateWorld({ tier, journal });
    clock = world.clock;
    const { gate, target, leases } = world;
    const system = { submit: async (proposal: Proposal) => (await gate.submit(proposal)).status, recover: () => gate.recover() };
    const outcome = await playFault(fault, { target, leases, system, clock });
    const entries = (await journal.scan(0, 1_000)).map(({ seq, entry, global }) => ({ seq, global, ...entry }) as JsonObject);
    return { outcome, refundedCents: target.refundedTotal(ORDER), refunds: target.refunds.length, entries, head: await journal.head() };
  } finally {
    await close();
  }
}

/** Play a fault at a tier on SQLite and on PostgreSQL (a journal of class `Journal`): both must come to the same. */
async function playBoth(fault: Fault, tier: Tier, onPg: JournalMaker, Journal: typeof PgJournal = PgJournal): Promise<void> {
  const sqlite = await playOn(onSqlite, fault, tier);
  const postgres = await playOn((wallClockMs) => onPg(wallClockMs, Journal), fault, tier);
  expect(postgres, `${fault} at tier ${tier}`).toEqual(sqlite);
  expect(sqlite.entries.length, `${fault} at tier ${tier} wrote entries`).toBeGreaterThan(0);
}

const dirs: string[] = [];
const onSqlite: JournalMaker = async (wallClockMs) => {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-gate-parity-'));
  dirs.push(dir);
  const database = openDatabase(join(dir, 'journal.sqlite'));
  return { journal: new SqliteJournal({ db: database.db, wallClockMs }), close: async () => database.close() };
};

/** Planted: a PostgreSQL journal whose `inFlight` finds no open dispatch, so recovery never settles one. */
class PgJournalLosingInFlight extends PgJournal {
  override async inFlight(): Promise<string[]> {
    return [];
  }
}

let template: PgDatabase | undefined;
const onPostgres: JournalMaker = async (wallClockMs, Journal = PgJournal) => {
  const database = await copyPgDatabase(template!, 'parity_case');
  const pool = openPgPool({ url: database.appUrl, max: 4 });
  return {
    journal: new Journal({ pool, wallClockMs }),
    close: async () => {
      await pool.end();
      await dropPgDatabase(database);
    },
  };
};

describe.skipIf(!available)('the gate on PostgreSQL and on SQLite', () => {
  beforeAll(async () => {
    template = await freshPgDatabase('parity_template');
  });
  afterAll(async () => {
    if (template !== undefined) await dropPgDatabase(template);
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it.each(FAULTS.map((fault) => [fault]))(
    'fault %s at tiers 1, 2 and 3: the same answer, the same refunds and the same journal, entry for entry',
    async (fault) => {
      await Promise.all(TIERS.map((tier) => playBoth(fault, tier, onPostgres)));
    },
    60_000,
  );

  it.fails('fails on a PostgreSQL journal that finds no open dispatch to recover: a crash before the send is settled otherwise', async () => {
    await playBoth('crash_before_send', 1, onPostgres, PgJournalLosingInFlight);
  });

  it('a DISPATCHED whose recorded grant snapshot is revoked verifies as not authorized, read back from either store', async () => {
    const grant = { lease_id: LEASE, max_cents: 5_000, revoked: 1_700_000_500, granted: 1_700_000_000 };
    const chain = buildChain(EFFECT_ID, committedSteps({ checks: liveChecks({ lease: grant }) }));
    const dataDir = mkdtempSync(join(tmpdir(), 'interlock-gate-parity-key-'));
    dirs.push(dataDir);
    const key = loadOrCreateSigningKey(dataDir);
    const reports: unknown[] = [];
    for (const make of [onSqlite, onPostgres]) {
      const { journal, close } = await make(() => 1_700_000_000_000);
      try {
        await journal.appendSealed(chain);
        const stored = await journal.entries(EFFECT_ID);
        expect(stored).toEqual(chain);
        const report = await verifyReceipt(signReceipt(EFFECT_ID, stored, key) as unknown as JsonObject, key.publicKeyPem);
        expect(report).toMatchObject({ authorized_when_fired: false });
        expect(report.problems.map((p) => p.code)).toEqual(['lease_not_attested']);
        reports.push(report);
      } finally {
        await close();
      }
    }
    expect(reports[1]).toEqual(reports[0]);
  });
});
