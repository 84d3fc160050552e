import type { PgPool } from '../../db/pg/pool.ts';
import { expect } from 'vitest';
import { familyLockName } from '../../db/pg/budget-slots.ts';
import type { BudgetSlotStore, FamilyAsk, SlotHolding } from '../../db/port/budget-slots.ts';
import { StoreBusyError } from '../../db/port/errors.ts';
import type { BudgetSlotsEnv } from './budget-slots.contract.ts';
import type { ContractCase } from './contract.ts';

// What a PostgreSQL store of the Stripe budget's slots does beyond the contract every store keeps
// (budget-slots.contract.ts): many servers' rounds at once, each on a pool of its own, never leave
// a slot believed held by two holders nor deadlock, and a round kept waiting fails as busy, keeping nothing.

export interface PgBudgetSlotsEnv extends BudgetSlotsEnv {
  /** A pool onto the same database as the application's role, for reading the rows. */
  pool: PgPool;
  /** A store on a pool of its own whose statements wait at most `lockTimeoutMs` for a lock. */
  otherWith(options: { lockTimeoutMs: number }): BudgetSlotStore;
}

const ACCOUNT = 'sandbox http://127.0.0.1:1';
const HOLD_MS = 3_000;
const T0 = 1_700_000_000_000;

/** The families each round asks of, with their slots. */
const FAMILIES: Record<string, number> = { '*': 6, 'POST /v1/charges': 3 };

/** A small seeded generator, so a failing interleaving can be run again. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/** Live slot rows naming each holder of each family at `nowMs`, by `holder family`. */
async function liveRows(pool: PgPool, nowMs: number): Promise<Map<string, number>> {
  const rows = await pool.query<{ holder: string; family: string; n: number }>(
    "SELECT holder, family, count(*)::int4 AS n FROM stripe_budget_slots WHERE account = $1 AND holder <> '' AND expires_ms > $2 GROUP BY holder, family ORDER BY holder, family",
    [ACCOUNT, nowMs],
  );
  return new Map(rows.rows.map((row) => [`${row.holder} ${row.family}`, row.n]));
}

export const pgBudgetSlotsCases: Record<string, ContractCase<PgBudgetSlotsEnv>> = {
  'many rounds from four pools at once, families asked in either order, never deadlock nor leave a slot believed held by two holders': async ({ store, other, pool }) => {
    const random = seeded(11);
    const stores = [store, other(), other(), other()];
    const beliefs = new Map<string, SlotHolding>();
    let waveMs = T0;
    for (let wave = 0; wave < 80; wave++) {
      // Mostly a renewal's gap; now and then long enough for every slot to lapse.
      waveMs += 1 + Math.floor(random() * 700) + (random() < 0.05 ? HOLD_MS : 0);
      const rounds = stores.map(async (connection, i) => {
        const holder = `p${i}`;
        const nowMs = waveMs + i;
        // Two families, asked in either order: rounds lock them alike whatever the order.
        const families = i % 2 === 0 ? Object.keys(FAMILIES) : Object.keys(FAMILIES).reverse();
        const asks: FamilyAsk[] = families.map((family) => {
          const slots = FAMILIES[family]!;
          const held = beliefs.get(`${holder} ${family}`);
          const need = held !== undefined && held.expiresMs > nowMs ? Math.floor(random() * (held.held + 1)) : 0;
          const want = random() < 0.7 ? slots : Math.floor(random() * slots);
          return { family, slots, want, need, capacity: slots };
        });
        const holdings = await connection.round({ account: ACCOUNT, holder, nowMs, holdMs: HOLD_MS, asks });
        for (const holding of holdings) {
          // Only this holder's rounds write rows naming it until this expiry, and none of the
          // others' rounds of this wave may take them: the rows must say exactly what it believes.
          const rows = await pool.query<{ n: number }>('SELECT count(*)::int4 AS n FROM stripe_budget_slots WHERE account = $1 AND family = $2 AND holder = $3 AND expires_ms = $4', [
            ACCOUNT,
            holding.family,
            holder,
            holding.expiresMs,
          ]);
          expect(rows.rows[0]?.n, `wave ${wave}, ${holder} of ${holding.family}`).toBe(holding.held);
          beliefs.set(`${holder} ${holding.family}`, holding);
        }
      });
      await Promise.all(rounds);
      // Once every round of the wave is in: each live slot names one holder, who believes it holds it.
      const atMs = waveMs + stores.length;
      const live = await liveRows(pool, atMs);
      for (const [family, slots] of Object.entries(FAMILIES)) {
        const believed = [...beliefs].filter(([key, h]) => key.endsWith(` ${family}`) && h.expiresMs > atMs);
        for (const [key, holding] of believed) expect(live.get(key) ?? 0, `wave ${wave}, ${key}`).toBe(holding.held);
        expect(believed.reduce((sum, [, h]) => sum + h.held, 0), `wave ${wave}, ${family}`).toBeLessThanOrEqual(slots);
      }
    }
  },

  'a round kept waiting for a family past the lock timeout fails as busy, keeps nothing, and the next one goes through': async ({ pool, otherWith }) => {
    const store = otherWith({ lockTimeoutMs: 100 });
    const asks: FamilyAsk[] = Object.entries(FAMILIES).map(([family, slots]) => ({ family, slots, want: slots, need: 0, capacity: slots }));
    const round = { account: ACCOUNT, holder: 'a', nowMs: T0, holdMs: HOLD_MS, asks };
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [familyLockName(ACCOUNT, 'POST /v1/charges')]);
      await expect(store.round(round)).rejects.toBeInstanceOf(StoreBusyError);
      await blocker.query('COMMIT');
    } finally {
      blocker.release();
    }
    expect(await liveRows(pool, T0)).toEqual(new Map());
    const holdings = await store.round({ ...round, nowMs: T0 + 1 });
    expect(holdings.map((h) => [h.family, h.held])).toEqual(Object.entries(FAMILIES));
    expect(await liveRows(pool, T0 + 1)).toEqual(new Map(Object.entries(FAMILIES).map(([family, slots]) => [`a ${family}`, slots])));
  },
};
