import type { Entry, EntryFields, EntryKind } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { hashEntry } from '../../server/journal/hash.ts';

/** Fields of one step, or a function of the entries sealed so far (to cite an earlier hash). */
export type StepFields = EntryFields | ((sealed: readonly Entry[]) => EntryFields);
/** One step of a chain: its kind and its fields. */
export type Step = readonly [EntryKind, StepFields?];

export const EFFECT_ID = 'abc123def456';
export const OTHER_EFFECT_ID = 'fed654cba321';
export const START_MS = 1_700_000_000_000;

/**
 * Seal a chain the way the journal does: `ts_ms` one second apart from `startMs`, `prev` the
 * previous entry's hash (null first), `hash` over everything else.
 */
export function buildChain(
  effectId: string,
  steps: readonly Step[],
  options: { startMs?: number; stepMs?: number } = {},
): Entry[] {
  const { startMs = START_MS, stepMs = 1_000 } = options;
  const sealed: Entry[] = [];
  for (const [index, [kind, fields = {}]] of steps.entries()) {
    // A deep copy, as a journal read gives: no two entries share a nested object.
    const data = structuredClone(typeof fields === 'function' ? fields(sealed) : fields);
    const unsealed = { ...data, effect_id: effectId, kind, ts_ms: startMs + index * stepMs, prev: sealed.at(-1)?.hash ?? null };
    sealed.push({ ...unsealed, hash: hashEntry(unsealed) } as Entry);
  }
  return sealed;
}

/** Re-seal edited entries in order, as a forger who rewrites the whole chain would. */
export function reseal(entries: readonly Entry[]): Entry[] {
  const sealed: Entry[] = [];
  for (const entry of entries) {
    const { hash: _old, ...rest } = entry;
    const unsealed = { ...rest, prev: sealed.at(-1)?.hash ?? null } as Parameters<typeof hashEntry>[0];
    sealed.push({ ...unsealed, hash: hashEntry(unsealed) } as Entry);
  }
  return sealed;
}

/** A deep copy of a chain with one entry's fields changed and its hash left as it was: a tampered receipt. */
export function editEntry(entries: readonly Entry[], index: number, edit: (entry: JsonObject) => void): Entry[] {
  const copy = structuredClone(entries) as Entry[];
  const target = copy[index];
  if (target === undefined) throw new Error(`no entry ${index}`);
  edit(target);
  return copy;
}

/** The entry at an index, failing the test loudly when it is missing. */
export function entryAt(entries: readonly Entry[], index: number): Entry {
  const entry = entries.at(index);
  if (entry === undefined) throw new Error(`no entry ${index}`);
  return entry;
}

/** The hash of the last sealed entry of a kind: what a DECIDED or a person lease cites. */
export function hashOfLast(sealed: readonly Entry[], kind: EntryKind): string {
  const entry = sealed.findLast((e) => e.kind === kind);
  if (entry === undefined) throw new Error(`no ${kind} entry yet`);
  return entry.hash;
}

export const REFUND = { order: '881', amount: 2_000 };
export const PREMISES = { order: '881', amount: 10_000, refunded: 0, disputed: false, payment_intent: 'pi_881' };
export const LEASE = 'L-refund';
export const REFUND_ID = 're_881_1';

/** What the gate records when the lease is live and every premise held. */
export function liveChecks(overrides: JsonObject = {}): JsonObject {
  return { lease_live: true, lease: null, violations: [], ...overrides };
}

/** Up to the send: PROPOSED, AUTHORIZED, DISPATCHED under a live lease on holding premises. */
export function dispatchedSteps(overrides: { effect?: JsonObject; checks?: JsonObject; lease?: Json } = {}): Step[] {
  const effect = overrides.effect ?? REFUND;
  const lease = overrides.lease ?? LEASE;
  return [
    ['PROPOSED', { agent: 'refund-bot', lease, premises: PREMISES, effect }],
    ['AUTHORIZED', { lease }],
    ['DISPATCHED', { effect, lease, premises: PREMISES, checks: overrides.checks ?? liveChecks() }],
  ];
}

/** The result Stripe returned for the refund. */
export function refundResult(refund = REFUND_ID, amount = REFUND.amount): JsonObject {
  return { refund, status: 'succeeded', amount };
}

/** A refund sent once and committed. */
export function committedSteps(overrides: Parameters<typeof dispatchedSteps>[0] = {}): Step[] {
  return [...dispatchedSteps(overrides), ['COMMITTED', { result: refundResult() }]];
}

/** A CONFIRMED entry from a Stripe webhook. */
export function confirmedFields(overrides: JsonObject = {}): JsonObject {
  return {
    via: 'webhook',
    event: 'evt_1',
    refund: REFUND_ID,
    status: 'succeeded',
    amount: REFUND.amount,
    payment_intent: 'pi_881',
    created: 1_700_000_100,
    ...overrides,
  };
}

/** An ESCALATED entry routed to the refunds group, on the given facts. */
export function escalatedFields(overrides: JsonObject = {}): JsonObject {
  return {
    at_ms: START_MS,
    reason: 'needs_judgment',
    why: 'a rule wants a person to decide',
    detail: 'over the auto-approve limit',
    failed_rules: [],
    facts: PREMISES,
    changes: [],
    repairs: [],
    route: 'large-refunds',
    group: 'refunds',
    routed_to: ['ann', 'bob'],
    level: 0,
    due_ms: START_MS + 3_600_000,
    breach: false,
    ...overrides,
  };
}

/** A DECIDED entry answering the latest escalation so far. */
export function decidedFields(overrides: JsonObject = {}): (sealed: readonly Entry[]) => EntryFields {
  return (sealed) => ({
    at_ms: START_MS + 60_000,
    by: 'ann',
    decision: 'approve',
    escalation: hashOfLast(sealed, 'ESCALATED'),
    group: 'refunds',
    members: ['ann', 'bob'],
    repair: null,
    ...overrides,
  });
}

/** The person lease the latest escalation's approval gives: `{by, at_ms, group, escalation}`. */
export function personLease(sealed: readonly Entry[], overrides: JsonObject = {}): JsonObject {
  return {
    by: 'ann',
    at_ms: START_MS + 60_000,
    group: 'refunds',
    escalation: hashOfLast(sealed, 'ESCALATED'),
    ...overrides,
  };
}

/**
 * A refund a person approved and the gate sent: the inbox binds the payload, escalates, the
 * person approves, then the gate proposes, authorizes, sends under the person lease and commits.
 */
export function personApprovedSteps(
  options: { lease?: JsonObject; premises?: JsonObject; decided?: JsonObject; beforeSend?: Step[] } = {},
): Step[] {
  const lease = (sealed: readonly Entry[]) => personLease(sealed, options.lease);
  return [
    ['PROPOSED', { agent: 'refund-bot', lease: null, premises: PREMISES, effect: REFUND }],
    ['ESCALATED', escalatedFields()],
    ['DECIDED', decidedFields(options.decided)],
    ...(options.beforeSend ?? []),
    ['PROPOSED', (sealed) => ({ agent: 'refund-bot', lease: lease(sealed), premises: PREMISES, effect: REFUND })],
    ['AUTHORIZED', (sealed) => ({ lease: lease(sealed) })],
    [
      'DISPATCHED',
      (sealed) => ({ effect: REFUND, lease: lease(sealed), premises: options.premises ?? PREMISES, checks: liveChecks() }),
    ],
    ['COMMITTED', { result: refundResult() }],
  ];
}

/** Any field of an entry by name, for tests that read a field without narrowing the kind first. */
export function loose(entry: Entry | undefined): JsonObject {
  if (entry === undefined) throw new Error('no entry');
  return entry as unknown as JsonObject;
}
