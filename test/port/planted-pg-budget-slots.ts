import type { PgClient, PgPool } from '../../db/pg/pool.ts';
import { type CapacityWant, planFamily } from '../../db/budget-slot-rules.ts';
import { PgBudgetSlots } from '../../db/pg/budget-slots.ts';
import type { SlotHolding, SlotRound, SlotRow } from '../../db/port/budget-slots.ts';

// A planted bad PostgreSQL store of the Stripe budget's slots, for pg-budget-slots.test.ts.

/**
 * It reads a family's wants and slots in one transaction, plans on them, and writes its want and
 * takes the slots it planned in another, without saying at the write that they must still be
 * free: between the two, another server's round can write its want and take the same slots, and
 * both then believe they hold them.
 */
export class SplitRoundPgBudgetSlots extends PgBudgetSlots {
  readonly #pool: PgPool;

  constructor(options: { pool: PgPool }) {
    super(options);
    this.#pool = options.pool;
  }

  override async round(round: SlotRound): Promise<SlotHolding[]> {
    const { account, holder, nowMs } = round;
    const expiresMs = nowMs + round.holdMs;
    // Families in one order, so its rounds wait for one another's rows rather than deadlock.
    const asks = [...round.asks].sort((a, b) => (a.family < b.family ? -1 : a.family > b.family ? 1 : 0));
    const planned = await this.#inTransaction(async (client) => {
      const plans = [];
      for (const ask of asks) {
        const { family } = ask;
        await client.query(
          "INSERT INTO stripe_budget_slots (account, family, slot, holder, expires_ms) SELECT $1, $2, slot, '', 0 FROM generate_series(0, $3::int4 - 1) AS slot ON CONFLICT DO NOTHING",
          [account, family, ask.slots],
        );
        const rows = (await client.query<SlotRow>('SELECT slot, holder, expires_ms AS "expiresMs" FROM stripe_budget_slots WHERE account = $1 AND family = $2 AND slot < $3 ORDER BY slot', [account, family, ask.slots])).rows;
        const others = (await client.query<CapacityWant>('SELECT holder, slots, capacity FROM stripe_budget_wants WHERE account = $1 AND family = $2 AND expires_ms > $3 AND holder <> $4 ORDER BY holder', [account, family, nowMs, holder])).rows;
        // The wants as they will be once this round's is written.
        const live = ask.want > 0 ? [...others, { holder, slots: ask.want, capacity: ask.capacity }] : others;
        plans.push({ ask, live, plan: planFamily(holder, nowMs, ask, rows, live) });
      }
      return plans;
    });
    const holdings = await this.#inTransaction(async (client) => {
      const holdings: SlotHolding[] = [];
      for (const { ask, live, plan } of planned) {
        const { family } = ask;
        if (ask.want > 0) {
          await client.query(
            'INSERT INTO stripe_budget_wants (account, family, holder, slots, expires_ms, capacity) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (account, family, holder) DO UPDATE SET slots = excluded.slots, expires_ms = excluded.expires_ms',
            [account, family, holder, ask.want, expiresMs, ask.capacity],
          );
        } else await client.query('DELETE FROM stripe_budget_wants WHERE account = $1 AND family = $2 AND holder = $3', [account, family, holder]);
        const hold = [...plan.keep, ...plan.take];
        await client.query('UPDATE stripe_budget_slots SET holder = $3, expires_ms = $4 WHERE account = $1 AND family = $2 AND slot = ANY($5::int4[])', [account, family, holder, expiresMs, hold]);
        await client.query("UPDATE stripe_budget_slots SET holder = '', expires_ms = 0 WHERE account = $1 AND family = $2 AND slot = ANY($4::int4[]) AND holder = $3", [account, family, holder, plan.release]);
        holdings.push({ family, held: hold.length, target: plan.target, expiresMs, wanting: live.length });
      }
      return holdings;
    });
    return round.asks.map((ask) => holdings.find((h) => h.family === ask.family)!);
  }

  async #inTransaction<T>(fn: (client: PgClient) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  }
}

/**
 * It takes no family lock: its rows' writes alone still take no slot another holds, but two rounds
 * asking of the same families in different orders each lock rows the other then waits for, and
 * PostgreSQL ends one of them as deadlocked.
 */
export class UnlockedPgBudgetSlots extends PgBudgetSlots {
  protected override async lockFamilies(): Promise<void> {}
}
