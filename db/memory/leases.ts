import { type HeldLease, type LeaseHolding, type Leases, refuseBadLeaseAsk, refuseBadTakeOver } from '../port/leases.ts';

/** One lease as the memory store keeps it; `holder` is '' for a lease given back. */
interface Row {
  holder: string;
  epoch: number;
  expiresMs: number;
}

/**
 * Leases in memory, for a storage no other process reaches (in memory, or read-only) and for
 * tests: every user of one instance shares them, on `nowMs` (default the wall clock).
 */
export class MemoryLeases implements Leases {
  readonly #rows = new Map<string, Row>();
  readonly #nowMs: () => number;

  constructor(options: { nowMs?: () => number } = {}) {
    this.#nowMs = options.nowMs ?? Date.now;
  }

  async acquire(name: string, holder: string, ttlMs: number): Promise<HeldLease | null> {
    refuseBadLeaseAsk(name, holder, ttlMs);
    const nowMs = this.#nowMs();
    const row = this.#rows.get(name) ?? { holder: '', epoch: 0, expiresMs: 0 };
    if (row.holder !== holder && row.expiresMs > nowMs) return null;
    const taken = { holder, epoch: row.holder === holder ? row.epoch : row.epoch + 1, expiresMs: nowMs + ttlMs };
    this.#rows.set(name, taken);
    return { name, ...taken };
  }

  async takeOver(name: string, holder: string, ttlMs: number, from: LeaseHolding): Promise<HeldLease | null> {
    refuseBadTakeOver(name, holder, ttlMs, from);
    const row = this.#rows.get(name);
    if (row === undefined || row.holder !== from.holder || row.epoch !== from.epoch) return null;
    const taken = { holder, epoch: row.epoch + 1, expiresMs: this.#nowMs() + ttlMs };
    this.#rows.set(name, taken);
    return { name, ...taken };
  }

  async heldNow(name: string): Promise<HeldLease | null> {
    const row = this.#rows.get(name);
    return row === undefined || row.holder === '' || row.expiresMs <= this.#nowMs() ? null : { name, ...row };
  }

  async release(name: string, holder: string, epoch: number): Promise<boolean> {
    const row = this.#rows.get(name);
    if (row === undefined || row.holder !== holder || row.epoch !== epoch) return false;
    this.#rows.set(name, { holder: '', epoch: row.epoch, expiresMs: 0 });
    return true;
  }

  async check(name: string, holder: string, epoch: number): Promise<boolean> {
    const row = this.#rows.get(name);
    return row !== undefined && row.holder === holder && row.epoch === epoch && row.expiresMs > this.#nowMs();
  }

  async countHeld(prefix: string): Promise<number> {
    const nowMs = this.#nowMs();
    return [...this.#rows].filter(([name, row]) => name.startsWith(prefix) && row.holder !== '' && row.expiresMs > nowMs).length;
  }

  async close(): Promise<void> {}
}
