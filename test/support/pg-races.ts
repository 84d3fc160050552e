import type { NewEntryRow } from '../../db/journal-rules.ts';
import { PgGrants } from '../../db/pg/grants.ts';
import { PgJournal, type PgTx } from '../../db/pg/journal.ts';
import type { PgPool } from '../../db/pg/pool.ts';
import type { GrantSight } from '../../db/port/grants.ts';
import type { Entry, EntryKind, FieldsOf } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import type { AppendIfResult, ChainCheck, ClaimRequest, ReservationGuard } from '../../server/journal/store.ts';

// Interleavings of two servers on one PostgreSQL database, made on purpose: a journal that holds
// its write transaction open at a chosen entry while the other server runs, a wait for the other
// server's statement to queue behind it, and stores planted with the bugs such races expose.

/** A point a caller is stopped at: `reached` once it is there, `release()` lets it go on. */
export interface Hold {
  reached: Promise<void>;
  release(): void;
}

/** A stop a caller makes itself: it calls `arrive()`, which resolves once the stop is released. */
export interface Stop extends Hold {
  arrive(): Promise<void>;
}

/** A new stop, not yet reached. */
export function stopPoint(): Stop {
  let arrived!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    reached,
    release,
    arrive: () => {
      arrived();
      return released;
    },
  };
}

/**
 * The real journal, which can be stopped inside a write transaction right after it inserted an
 * entry of a given kind (the head row locked, the entry not yet committed), or right after a read
 * of a chain, until released.
 */
export class HeldPgJournal extends PgJournal {
  readonly #writes = new Map<EntryKind, Stop>();
  #read: Stop | null = null;

  /** Stop the next write of a `kind` entry inside its transaction. */
  holdWrite(kind: EntryKind): Hold {
    const hold = stopPoint();
    this.#writes.set(kind, hold);
    return hold;
  }

  /** Stop the next read of a chain once it has read it. */
  holdRead(): Hold {
    this.#read = stopPoint();
    return this.#read;
  }

  override async entries(effectId: string) {
    const chain = await super.entries(effectId);
    const hold = this.#read;
    this.#read = null;
    if (hold !== null) await hold.arrive();
    return chain;
  }

  protected override async insertRow(tx: PgTx, row: NewEntryRow): Promise<number> {
    const seq = await super.insertRow(tx, row);
    const hold = this.#writes.get(row.kind as EntryKind);
    if (hold !== undefined) {
      this.#writes.delete(row.kind as EntryKind);
      await hold.arrive();
    }
    return seq;
  }
}

/**
 * Planted: a server that keeps the chain it last read of each effect and runs a conditional
 * append's check on that, not on the chain under the write's lock (check, then act). A check
 * another server's write has made stale since then lets through what it should refuse.
 */
export class PgChecksLastRead extends HeldPgJournal {
  readonly #lastRead = new Map<string, Entry[]>();

  override async entries(effectId: string) {
    const chain = await super.entries(effectId);
    this.#lastRead.set(effectId, chain);
    return chain;
  }

  override async appendIf<K extends EntryKind>(
    kind: K,
    effectId: string,
    check: ChainCheck,
    fields: FieldsOf<K>,
    claim?: ClaimRequest,
    guard?: ReservationGuard,
  ): Promise<AppendIfResult<K>> {
    const verdict = check(this.#lastRead.get(effectId) ?? (await this.entries(effectId)));
    return super.appendIf(kind, effectId, () => verdict, fields, claim, guard);
  }
}

/** Planted: grants a server reads once and keeps, so another server's revocation never reaches it. */
export class PgGrantsReadOnce extends PgGrants {
  readonly #seen = new Map<string, GrantSight>();

  override async see(lease: Json, effect: JsonObject): Promise<GrantSight> {
    const key = JSON.stringify(lease);
    const kept = this.#seen.get(key);
    if (kept !== undefined) return kept;
    const sight = await super.see(lease, effect);
    this.#seen.set(key, sight);
    return sight;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `waiting` once a session of the database waits for a lock (the other server's statement queued
 * behind a transaction held open), or `settled` when `call` settles first; within `withinMs`.
 */
export async function lockWaitOrSettled(observer: PgPool, call: Promise<unknown>, withinMs = 10_000): Promise<'waiting' | 'settled'> {
  let settled = false;
  call.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    if (settled) return 'settled';
    const waiting = await observer.query<{ n: number }>(
      "SELECT count(*)::int8 AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    if (waiting.rows[0]!.n > 0) return 'waiting';
    await sleep(10);
  }
  throw new Error(`neither a lock wait nor an answer within ${withinMs} ms`);
}
