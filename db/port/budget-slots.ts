import type { BudgetLeaseStore } from '../budget-lease-rules.ts';

/** The Stripe budget's slots, shared by every process on one storage: one round is one transaction. */
export type BudgetSlots = BudgetLeaseStore;
