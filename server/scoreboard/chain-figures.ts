import type { MoneyFigures } from './money.ts';

/** What one chain adds to the figures; the board is the sum over chains, so it can be kept up to date chain by chain. */
export interface ChainFigures {
  /** When the request was first made, on the application clock (null for chains from before it was recorded). */
  requestedAtMs: number | null;
  /** Every group the chain was routed to. */
  groups: string[];
  root: boolean;
  cleared: boolean;
  clearedVerified: boolean;
  sentAfterPerson: boolean;
  committed: boolean;
  rejected: number;
  closedByRepair: number;
  /** Repairs a person accepted: a new request replaced the one asked (never an approval on the facts now). */
  repairsAccepted: number;
  /** Approvals of the same refund on the facts as they are now, after the payment changed: approvals, not repairs. */
  approvedOnFactsNow: number;
  open: boolean;
  escalated: boolean;
  reasons: string[];
  /** The group each of those trips went to first, in the same order. */
  reasonGroups: string[];
  staleCaught: number;
  crashToPerson: number;
  repairsSuggested: number;
  breachesByGroup: Record<string, number>;
  /** The same breaches, by the group that missed the deadline. */
  breachesMissedByGroup: Record<string, number>;
  confirmed: boolean;
  waitsMs: number[];
  /** The currency of the request (lowercase), or `unknown`. */
  currency: string;
  /** What the chain adds to its currency's money figures. */
  money: MoneyFigures;
}
