import Database from 'better-sqlite3';
import { and, eq, gt, lt, lte, or, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { planFamily, smallerCapacity } from './budget-slot-rules.ts';
import { followDeferral } from './derived-upkeep.ts';
import type { BudgetSlotStore, FamilyAsk, SlotHolding, SlotRound } from './port/budget-slots.ts';
import type { OpenDatabase } from './open.ts';
import * as schema from './schema.ts';
import { stripeBudgetSlots as slotRows, stripeBudgetWants as wants } from './schema.ts';

/**
 * A slot round waits at most this long for another process's write (a journal batch and its
 * fsync); past it the round is skipped and tried again, the slots held lapsing meanwhile only if
 * the store stays busy past their margin.
 */
const BUSY_TIMEOUT_MS = 100;
/** A want row this long past its expiry is a process that stopped: its row is removed. */
const WANT_FORGOTTEN_MS = 60_000;

const p = {
  account: sql.placeholder('account'),
  family: sql.placeholder('family'),
  slot: sql.placeholder('slot'),
  holder: sql.placeholder('holder'),
  nowMs: sql.placeholder('nowMs'),
  expiresMs: sql.placeholder('expiresMs'),
};

/**
 * Every statement of a round, compiled once. Plain SQL that PostgreSQL runs as well: one row per
 * slot, and writes that say in their WHERE when they may happen, so a slot another process took
 * meanwhile is simply not taken.
 */
function prepareQueries(db: ReturnType<typeof drizzle<typeof schema>>) {
  const family = and(eq(slotRows.account, p.account), eq(slotRows.family, p.family));
  return {
    addSlot: db.insert(slotRows).values({ account: p.account, family: p.family, slot: p.slot, holder: '', expiresMs: 0 }).onConflictDoNothing().prepare(),
    slots: db
      .select({ slot: slotRows.slot, holder: slotRows.holder, expiresMs: slotRows.expiresMs })
      .from(slotRows)
      .where(and(family, lt(slotRows.slot, sql.placeholder('slots'))))
      .orderBy(slotRows.slot)
      .prepare(),
    // Taken (or renewed) only when free, expired or this holder's own.
    take: db
      .update(slotRows)
      .set({ holder: sql`${p.holder}`, expiresMs: sql`${p.expiresMs}` })
      .where(and(family, eq(slotRows.slot, p.slot), or(eq(slotRows.holder, p.holder), lte(slotRows.expiresMs, p.nowMs))))
      .prepare(),
    giveBack: db
      .update(slotRows)
      .set({ holder: '', expiresMs: 0 })
      .where(and(family, eq(slotRows.slot, p.slot), eq(slotRows.holder, p.holder)))
      .prepare(),
    putWant: db
      .insert(wants)
      .values({ account: p.account, family: p.family, holder: p.holder, slots: sql.placeholder('slots'), expiresMs: p.expiresMs, capacity: sql.placeholder('capacity') })
      .onConflictDoUpdate({
        target: [wants.account, wants.family, wants.holder],
        set: { slots: sql`excluded.slots`, expiresMs: sql`excluded.expires_ms`, capacity: sql`excluded.capacity` },
      })
      .prepare(),
    dropWant: db.delete(wants).where(and(eq(wants.account, p.account), eq(wants.family, p.family), eq(wants.holder, p.holder))).prepare(),
    liveWants: db
      .select({ holder: wants.holder, slots: wants.slots, capacity: wants.capacity })
      .from(wants)
      .where(and(eq(wants.account, p.account), eq(wants.family, p.family), gt(wants.expiresMs, p.nowMs)))
      .prepare(),
    forgetWants: db.delete(wants).where(and(eq(wants.account, p.account), lt(wants.expiresMs, sql.placeholder('beforeMs')))).prepare(),
  };
}

type Queries = ReturnType<typeof prepareQueries>;

/**
 * The Stripe budget's slots in the journal's SQLite file, on a connection of their own: its
 * commits do not wait for the disk (`synchronous = NORMAL`: in WAL mode a commit is not synced,
 * checkpoints still are, so the journal's own commits stay as durable as they were), its rounds
 * wait at most `BUSY_TIMEOUT_MS` for the write lock, and each is a few row writes, so it holds the
 * lock for microseconds beside the journal's group commits.
 */
export class SqliteBudgetSlots implements BudgetSlotStore {
  readonly #file: string;
  #sqlite: Database.Database | null = null;
  #queries: Queries | null = null;
  /** Families whose slot rows this connection has made sure exist, with their count. */
  readonly #made = new Map<string, number>();

  /** The slots beside a journal database; null for one in memory, which no other process can share. */
  static beside(database: OpenDatabase): SqliteBudgetSlots | null {
    if (database.sqlite.memory) return null;
    return new SqliteBudgetSlots(database.sqlite.name);
  }

  constructor(file: string) {
    this.#file = file;
  }

  round(round: SlotRound): Promise<SlotHolding[]> {
    try {
      const { sqlite, queries } = this.#open();
      followDeferral(sqlite);
      const run = sqlite.transaction(() => {
        queries.forgetWants.run({ account: round.account, beforeMs: round.nowMs - WANT_FORGOTTEN_MS });
        return round.asks.map((ask) => this.#family(queries, round, ask));
      });
      return Promise.resolve(run.immediate());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async close(): Promise<void> {
    this.#sqlite?.close();
    this.#sqlite = null;
    this.#queries = null;
    this.#made.clear();
  }

  /** The connection, opened at the first round (a process that never calls Stripe never opens it). */
  #open(): { sqlite: Database.Database; queries: Queries } {
    if (this.#sqlite !== null && this.#queries !== null) return { sqlite: this.#sqlite, queries: this.#queries };
    const sqlite = new Database(this.#file, { fileMustExist: true });
    try {
      sqlite.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      sqlite.pragma('synchronous = NORMAL');
      this.#queries = prepareQueries(drizzle({ client: sqlite, schema }));
    } catch (error) {
      sqlite.close();
      throw error;
    }
    this.#sqlite = sqlite;
    return { sqlite, queries: this.#queries };
  }

  #family(queries: Queries, round: SlotRound, ask: FamilyAsk): SlotHolding {
    const { account, holder, nowMs } = round;
    const { family } = ask;
    const expiresMs = nowMs + round.holdMs;
    if ((this.#made.get(family) ?? 0) < ask.slots) {
      for (let slot = 0; slot < ask.slots; slot++) queries.addSlot.run({ account, family, slot });
      this.#made.set(family, ask.slots);
    }
    // A process configured for a smaller capacity is live: yield to it (want nothing).
    const smaller = smallerCapacity(holder, ask, queries.liveWants.all({ account, family, nowMs }));
    const asked = smaller === undefined ? ask : { ...ask, want: 0 };
    if (asked.want > 0) queries.putWant.run({ account, family, holder, slots: asked.want, expiresMs, capacity: ask.capacity });
    else queries.dropWant.run({ account, family, holder });
    const rows = queries.slots.all({ account, family, slots: ask.slots });
    const live = queries.liveWants.all({ account, family, nowMs });
    const plan = planFamily(holder, nowMs, asked, rows, live);
    let held = 0;
    for (const slot of [...plan.keep, ...plan.take]) held += queries.take.run({ account, family, slot, holder, nowMs, expiresMs }).changes;
    for (const slot of plan.release) queries.giveBack.run({ account, family, slot, holder });
    return { family, held, target: plan.target, expiresMs, wanting: live.length, ...(smaller === undefined ? {} : { smaller }) };
  }
}
