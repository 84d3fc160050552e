/**
 * A value frozen to its depths, and answered: what a memory store hands every reader of one
 * stored value, so that a reader trying to change it is refused at once (a store on disk answers
 * each read with a copy of its own, so no reader may count on changing one).
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}
