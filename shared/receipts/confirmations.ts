/** Stripe's refund statuses as confirmations report them, ranked: which one stands. Pure, no I/O. */

/**
 * Refund status precedence (spec §8.3): a final status outranks `succeeded`, which outranks
 * anything still moving (pending, requires_action, ...), which ranks 0.
 */
export const CONFIRMATION_STATUS_RANK: Readonly<Record<string, number>> = { succeeded: 1, failed: 2, canceled: 2 };

/** The precedence rank of a refund status (spec §8.3); anything not final or succeeded ranks 0. */
export function statusRank(status: string): number {
  return Object.hasOwn(CONFIRMATION_STATUS_RANK, status) ? (CONFIRMATION_STATUS_RANK[status] ?? 0) : 0;
}

/** The status that stands among several confirmations: the highest rank, and the latest among equals. */
export function finalStatus(statuses: readonly string[]): string | null {
  let standing: string | null = null;
  for (const status of statuses) {
    if (standing === null || statusRank(status) >= statusRank(standing)) standing = status;
  }
  return standing;
}
