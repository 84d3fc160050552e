import { randomBytes } from 'node:crypto';
import type { JsonObject } from '../shared/json.ts';
import type { Proposal } from '../server/gate/gate.ts';
import { effectIdFor } from '../server/journal/hash.ts';
import type { MemoryPayments } from '../server/targets/memory-payments.ts';

/** What the refund experiment calls on every system it compares. */
export interface RefundSystem {
  submit(proposal: Proposal): Promise<string>;
  /** Settle what a crash left open; an empty map when the system has nothing to recover. */
  recover(): Promise<Map<string, string>>;
}

/** Today's agent: no journal, a fresh id every time, so a retry is a second refund. */
export class NaiveSender implements RefundSystem {
  constructor(private readonly target: MemoryPayments) {}

  async submit(proposal: Proposal): Promise<string> {
    await this.target.apply(randomBytes(6).toString('hex'), proposal.effect);
    return 'APPLIED';
  }

  async recover(): Promise<Map<string, string>> {
    return new Map();
  }
}

/** An idempotency key per request and nothing else: no authority or fact checks. */
export class IdempotencyOnlySender implements RefundSystem {
  constructor(private readonly target: MemoryPayments) {}

  async submit(proposal: Proposal): Promise<string> {
    const result = await this.target.apply(effectIdFor(proposal.requestKey ?? proposal.effect), proposal.effect);
    return `APPLIED:${String(result.status)}`;
  }

  async recover(): Promise<Map<string, string>> {
    return new Map();
  }
}

/**
 * Durable execution: completed steps are remembered and replayed, started ones are re-run on
 * recovery with the same key; it never asks whether the authority or the facts still hold.
 */
export class DurableSender implements RefundSystem {
  readonly #completed = new Map<string, string>();
  readonly #started = new Map<string, JsonObject>();

  constructor(private readonly target: MemoryPayments) {}

  async submit(proposal: Proposal): Promise<string> {
    const id = effectIdFor(proposal.requestKey ?? proposal.effect);
    const done = this.#completed.get(id);
    if (done !== undefined) return `REPLAYED:${done}`;
    this.#started.set(id, proposal.effect);
    const result = await this.target.apply(id, proposal.effect);
    this.#completed.set(id, String(result.status));
    this.#started.delete(id);
    return `COMPLETED:${String(result.status)}`;
  }

  async recover(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const [id, effect] of this.#started) {
      const result = await this.target.apply(id, effect);
      const status = `RERUN:${String(result.status)}`;
      this.#completed.set(id, status);
      this.#started.delete(id);
      out.set(id, status);
    }
    return out;
  }
}
