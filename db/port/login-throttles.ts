// The counts behind login throttling as a store keeps them (server/throttle/login.ts decides on
// them, server/throttle/login-throttle.ts asks the store). Three kinds of count, each by its key:
// failures of one name from one address (`pair`), of one name from anywhere (`name`), and from one
// address under any name (`address`). A store shared by several servers makes each server's
// failures count on every other: an attacker gets one allowance, not one per server, and a name
// held on one server is held on all of them.

/** The kinds of count, in the order a step takes them (every store takes them in this order). */
export const LOGIN_COUNT_KINDS = ['pair', 'name', 'address'] as const;
/** One kind of count. */
export type LoginCountKind = (typeof LOGIN_COUNT_KINDS)[number];

/** One count as a store keeps it: `failures` (fractional once drained) as of `atMs`. */
export interface LoginCount {
  failures: number;
  atMs: number;
}

/** A count to keep, and from when it says nothing any more (read as absent): the store may then forget it. */
export interface LoginCountWrite extends LoginCount {
  forgetAtMs: number;
}

/** The key of each kind of count that one login attempt touches. */
export type LoginKeys = Record<LoginCountKind, string>;

/** The counts of one attempt's keys as stored (undefined: none kept). */
export type LoginCounts = Record<LoginCountKind, LoginCount | undefined>;

/** What a step leaves of each count: a new value, null to forget it, absent to leave it as it is. */
export type LoginWrites = Partial<Record<LoginCountKind, LoginCountWrite | null>>;

/** What a step's decision returns: the writes to keep and the answer to give. */
export interface LoginStepResult<T> {
  writes: LoginWrites;
  answer: T;
}

/**
 * Where the login counts live. A step reads the counts of one attempt's keys, lets `decide` say
 * what they become, and keeps that, as one step: no other step on any of those keys, on this store
 * or on another server's over the same storage, reads between its read and its write, so attempts
 * sent at once (to one server or to several) are all counted. A store keeps a bounded number of
 * counts: forgetting one (the least recently written first) only makes the throttle more lenient
 * to that key, never stricter to another.
 */
export interface LoginThrottles {
  /** One step at `nowMs` over `keys`; `decide` runs once, with the counts as they stand, and must not throw. */
  step<T>(keys: LoginKeys, nowMs: number, decide: (counts: LoginCounts) => LoginStepResult<T>): Promise<T>;
}
