// The Stripe budget's slots as a store keeps them (server/stripe/budget-slots.ts says why they keep
// processes sharing an account within its limits; db/budget-slot-rules.ts is what a round does).

/** One slot as the store holds it: who holds it until when; `holder` is '' for a slot given back. */
export interface SlotRow {
  slot: number;
  holder: string;
  expiresMs: number;
}

/** What a process asks of one family in a round. */
export interface FamilyAsk {
  family: string;
  /** The family's slots (0 to slots - 1). */
  slots: number;
  /** Slots it wants: 0 when it has nothing out or waiting (its want row is then removed). */
  want: number;
  /** Slots its places need: it keeps at least these of the ones it holds. */
  need: number;
  /** The family's calls a second as this process is configured: every process sharing the account must say the same. */
  capacity: number;
}

/** A process's slots of a family after a round. */
export interface SlotHolding {
  family: string;
  held: number;
  target: number;
  expiresMs: number;
  /** The processes that want some of the family's slots now, this one included if it does. */
  wanting: number;
  /**
   * Another live process configured for a smaller capacity of the family, when there is one: this
   * process then yields (wants nothing, keeps only what its places need), so the sum stays within
   * the smaller, and says so until they agree.
   */
  smaller?: { holder: string; capacity: number };
}

/** One round for a holder: its asks of each family, at `nowMs`, each slot held for `holdMs`. */
export interface SlotRound {
  account: string;
  holder: string;
  nowMs: number;
  holdMs: number;
  asks: FamilyAsk[];
}

/**
 * Where the slots live, shared by every process on the store, off the journal's durability path.
 * A round is one transaction: it writes the holder's wants, reads the family's wants and slots,
 * plans with `planFamily`, and takes, renews and gives back slots with conditional writes (a slot
 * is taken only if it is free, expired or the holder's own), so however rounds interleave no slot
 * is held by two live holders and no more are held than the family has.
 */
export interface BudgetSlotStore {
  round(round: SlotRound): Promise<SlotHolding[]>;
  /** Close the store's connection; a round after it opens it again. */
  close(): Promise<void>;
}

