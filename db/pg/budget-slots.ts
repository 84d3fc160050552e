import type pg from 'pg';
import { type CapacityWant, planFamily, smallerCapacity } from '../budget-slot-rules.ts';
import type { BudgetSlotStore, FamilyAsk, SlotHolding, SlotRound, SlotRow } from '../port/budget-slots.ts';
import { inTransaction } from './pool.ts';

// The PostgreSQL side of the Stripe budget's slots (db/port/budget-slots.ts): the rules of
// db/budget-slot-rules.ts over rows every server sharing the database reads and writes.

/** A want row this long past its expiry is a process that stopped: its row is removed. */
const WANT_FORGOTTEN_MS = 60_000;

/**
 * What a family's transaction lock is named by: every round of any server touching the family's
 * rows holds it, so their rounds on one family follow one another.
 */
export function familyLockName(account: string, family: string): string {
  return `interlock.budget-slots\n${account}\n${family}`;
}

// The round's families locked in one statement, in the order of their keys (not their names: two
// names of one key are then one lock, taken once), so two rounds asking for the same families in
// any order wait for one another and never each hold a lock the other waits for.
const LOCK_FAMILIES_SQL =
  'SELECT count(pg_advisory_xact_lock(key)) AS locked FROM (SELECT DISTINCT hashtextextended(name, 0) AS key FROM unnest($1::text[]) AS name ORDER BY key) AS keys';

// Wants of the account long expired, whatever their family: a row another round is writing (one
// of a family this round has not locked) is skipped, never waited for, and forgotten later.
const FORGET_WANTS_SQL =
  'DELETE FROM stripe_budget_wants WHERE (account, family, holder) IN (SELECT account, family, holder FROM stripe_budget_wants WHERE account = $1 AND expires_ms < $2 FOR UPDATE SKIP LOCKED)';

const ADD_SLOTS_SQL =
  "INSERT INTO stripe_budget_slots (account, family, slot, holder, expires_ms) SELECT $1, $2, slot, '', 0 FROM generate_series(0, $3::int4 - 1) AS slot ON CONFLICT DO NOTHING";

const SLOTS_SQL = 'SELECT slot, holder, expires_ms AS "expiresMs" FROM stripe_budget_slots WHERE account = $1 AND family = $2 AND slot < $3 ORDER BY slot';

const LIVE_WANTS_SQL = 'SELECT holder, slots, capacity FROM stripe_budget_wants WHERE account = $1 AND family = $2 AND expires_ms > $3 ORDER BY holder';

const PUT_WANT_SQL =
  'INSERT INTO stripe_budget_wants (account, family, holder, slots, expires_ms, capacity) VALUES ($1, $2, $3, $4, $5, $6) ' +
  'ON CONFLICT (account, family, holder) DO UPDATE SET slots = excluded.slots, expires_ms = excluded.expires_ms, capacity = excluded.capacity';

const DROP_WANT_SQL = 'DELETE FROM stripe_budget_wants WHERE account = $1 AND family = $2 AND holder = $3';

// Taken (or renewed) only when free, expired or this holder's own, as on SQLite.
const TAKE_SQL =
  'UPDATE stripe_budget_slots SET holder = $3, expires_ms = $4 WHERE account = $1 AND family = $2 AND slot = ANY($5::int4[]) AND (holder = $3 OR expires_ms <= $6)';

const GIVE_BACK_SQL = "UPDATE stripe_budget_slots SET holder = '', expires_ms = 0 WHERE account = $1 AND family = $2 AND slot = ANY($4::int4[]) AND holder = $3";

/**
 * The Stripe budget's slots on PostgreSQL, shared by every server on the database. A round is one
 * READ COMMITTED transaction that first takes a transaction lock per family it asks of (in a fixed
 * order), then writes the holder's wants, reads the family's wants and slots, plans, and takes,
 * renews and gives back slots with conditional writes. So rounds of one family run one after
 * another and never deadlock; a lock waited on past the pool's lock timeout, or a deadlock or
 * serialization failure all the same, fails the round with StoreBusyError, nothing of it kept, and
 * the budget tries again at its next round (server/stripe/budget-slots.ts), as it does on SQLite.
 */
export class PgBudgetSlots implements BudgetSlotStore {
  readonly #pool: pg.Pool;
  /** Families (by account) whose slot rows a committed round made sure exist, with their count. */
  readonly #made = new Map<string, number>();

  constructor(options: { pool: pg.Pool }) {
    this.#pool = options.pool;
  }

  async round(round: SlotRound): Promise<SlotHolding[]> {
    const made = new Map<string, number>();
    const holdings = await inTransaction(this.#pool, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
      await this.lockFamilies(client, round);
      await client.query(FORGET_WANTS_SQL, [round.account, round.nowMs - WANT_FORGOTTEN_MS]);
      const answers: SlotHolding[] = [];
      for (const ask of round.asks) answers.push(await this.#family(client, round, ask, made));
      return answers;
    });
    // Only once committed: a round rolled back made no rows.
    for (const [key, slots] of made) this.#made.set(key, slots);
    return holdings;
  }

  /** The pool is the storage's, closed with it; only what this store remembers is forgotten. */
  async close(): Promise<void> {
    this.#made.clear();
  }

  /** Hold the transaction lock of each family the round asks of, until the round ends. */
  protected async lockFamilies(client: pg.ClientBase, round: SlotRound): Promise<void> {
    await client.query(LOCK_FAMILIES_SQL, [round.asks.map((ask) => familyLockName(round.account, ask.family))]);
  }

  async #family(client: pg.ClientBase, round: SlotRound, ask: FamilyAsk, made: Map<string, number>): Promise<SlotHolding> {
    const { account, holder, nowMs } = round;
    const { family } = ask;
    const expiresMs = nowMs + round.holdMs;
    const key = JSON.stringify([account, family]);
    if ((this.#made.get(key) ?? 0) < ask.slots) {
      await client.query(ADD_SLOTS_SQL, [account, family, ask.slots]);
      made.set(key, ask.slots);
    }
    // A process configured for a smaller capacity is live: yield to it (want nothing).
    const smaller = smallerCapacity(holder, ask, (await client.query<CapacityWant>(LIVE_WANTS_SQL, [account, family, nowMs])).rows);
    const asked = smaller === undefined ? ask : { ...ask, want: 0 };
    if (asked.want > 0) await client.query(PUT_WANT_SQL, [account, family, holder, asked.want, expiresMs, ask.capacity]);
    else await client.query(DROP_WANT_SQL, [account, family, holder]);
    const rows = (await client.query<SlotRow>(SLOTS_SQL, [account, family, ask.slots])).rows;
    const live = (await client.query<CapacityWant>(LIVE_WANTS_SQL, [account, family, nowMs])).rows;
    const plan = planFamily(holder, nowMs, asked, rows, live);
    const hold = [...plan.keep, ...plan.take];
    const held = hold.length === 0 ? 0 : ((await client.query(TAKE_SQL, [account, family, holder, expiresMs, hold, nowMs])).rowCount ?? 0);
    if (plan.release.length > 0) await client.query(GIVE_BACK_SQL, [account, family, holder, plan.release]);
    return { family, held, target: plan.target, expiresMs, wanting: live.length, ...(smaller === undefined ? {} : { smaller }) };
  }
}
