import type { Change, Repair } from '../../shared/entries.ts';
import { type JsonObject, jsonEqual } from '../../shared/json.ts';

/** Facts compared and repaired, free of I/O: the targets read the world, this decides. */

/** One change per key (sorted) whose value differs between two fact objects; a missing key reads as null. */
export function diffFacts(was: JsonObject, now: JsonObject): Change[] {
  const keys = [...new Set([...Object.keys(was), ...Object.keys(now)])].sort();
  const changes: Change[] = [];
  for (const field of keys) {
    const before = was[field] ?? null;
    const after = now[field] ?? null;
    if (!jsonEqual(before, after)) changes.push({ field, was: before, now: after });
  }
  return changes;
}

/** Cents as dollars for people: 7000 → "$70.00". */
export function formatCents(amountCents: number): string {
  const sign = amountCents < 0 ? '-' : '';
  const abs = Math.abs(amountCents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString('en-US')}.${String(abs % 100).padStart(2, '0')}`;
}

/**
 * The safe repairs for a refund of `amountCents` when `remainingCents` of `totalCents` is left:
 * the same amount if it still fits, else what is left, else nothing.
 */
export function repairsThatFit(amountCents: number, remainingCents: number, totalCents: number): Repair[] {
  if (amountCents > 0 && amountCents <= remainingCents) {
    return [
      {
        code: 'still_fits',
        set: {},
        why:
          `${formatCents(amountCents)} still fits: ${formatCents(remainingCents)} of ${formatCents(totalCents)} is left to refund, ` +
          'provided the other refund was not this one',
      },
    ];
  }
  if (remainingCents > 0 && remainingCents < amountCents) {
    return [
      {
        code: 'refund_remaining',
        set: { amount: remainingCents },
        why: `Refund ${formatCents(remainingCents)}, what is left of ${formatCents(totalCents)}`,
      },
    ];
  }
  return [];
}

/** One line for a person: `field: was X, now Y`. */
export function renderChange(change: Change): string {
  return `${change.field}: was ${JSON.stringify(change.was)}, now ${JSON.stringify(change.now)}`;
}
