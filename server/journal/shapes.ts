import { COMMIT_VIAS, CONFIG_CAUSES, DECISIONS, ENTRY_KINDS, type Entry, type EntryKind, type EntryOf, REPAIR_CODES } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';

/**
 * The shape of every journal entry kind, checked when an entry is read back (and when one is
 * written, for our own bugs): what `shared/entries.ts` declares, field by field. A stored entry
 * that fails its shape is as corrupt as one that fails its hash, so a read fails closed on it.
 * Fields beyond the declared ones are allowed (an entry written by a later version still reads).
 */

type Check = (value: Json | undefined) => boolean;

const string: Check = (v) => typeof v === 'string';
const number: Check = (v) => typeof v === 'number' && Number.isFinite(v);
const boolean: Check = (v) => typeof v === 'boolean';
const any: Check = (v) => v !== undefined;
const object: Check = (v) => v !== undefined && isJsonObject(v);
const nullable = (check: Check): Check => (v) => v === null || check(v);
const optional = (check: Check): Check => (v) => v === undefined || check(v);
const listOf = (check: Check): Check => (v) => Array.isArray(v) && v.every((item) => check(item));
const oneOf = (values: readonly string[]): Check => (v) => typeof v === 'string' && values.includes(v);

/** An object whose fields each hold their check. */
const fields =
  (shape: Record<string, Check>): Check =>
  (v) =>
    v !== undefined && isJsonObject(v) && fieldsHold(v, shape);

const change = fields({ field: string, was: any, now: any });
const repairSet: Check = (v) => v !== undefined && isJsonObject(v) && Object.values(v).every((x) => typeof x === 'number');
const repair = fields({ code: oneOf(REPAIR_CODES), set: repairSet, why: string });
const checks = fields({ lease_live: boolean, lease: any, violations: optional(listOf(string)), use_problems: optional(listOf(string)) });
const decidedRepair = fields({ code: string, set: object, request_id: string });
const failedRule = fields({ rule: string, words: string });
const membership = fields({ group: string, name: string });

/** Each kind's fields and what each must hold. */
const SHAPES: { [K in EntryKind]: Record<string, Check> } = {
  PROPOSED: { agent: string, lease: any, premises: any, effect: object, request: optional(object), at_ms: optional(number), http_request_id: optional(string) },
  AUTHORIZED: { lease: any },
  DISPATCHED: { effect: object, lease: any, premises: any, checks, reserves: optional(string) },
  COMMITTED: {
    result: optional(any),
    via: optional(oneOf(COMMIT_VIAS)),
    rechecked: optional(nullable(checks)),
    found: optional(any),
  },
  REFUSED: {
    code: string,
    reason: any,
    checks: optional(checks),
    changes: optional(listOf(change)),
    repairs: optional(listOf(repair)),
    resolves: optional(boolean),
    rechecked: optional(checks),
  },
  AMBIGUOUS: { code: string, reason: optional(string), rechecked: optional(checks), changes: optional(listOf(change)) },
  ESCALATED: {
    at_ms: number,
    reason: string,
    why: string,
    detail: any,
    // Missing on escalations journaled before the words of failed rules were kept.
    failed_rules: optional(listOf(failedRule)),
    facts: object,
    changes: listOf(change),
    repairs: listOf(repair),
    route: string,
    // Missing on escalations journaled before the routed chain and SLA were kept.
    routing: optional(nullable(fields({ chain: listOf(string), sla_ms: nullable(number) }))),
    group: string,
    routed_to: listOf(string),
    level: number,
    due_ms: nullable(number),
    breach: boolean,
  },
  DECIDED: {
    at_ms: number,
    by: string,
    decision: oneOf(DECISIONS),
    escalation: string,
    group: string,
    members: listOf(string),
    repair: nullable(decidedRepair),
    reason: optional(nullable(string)),
  },
  CONFIRMED: {
    via: string,
    event: nullable(string),
    refund: string,
    status: string,
    amount: number,
    payment_intent: string,
    created: nullable(number),
  },
  MESSAGE: {
    at_ms: number,
    event: string,
    about: nullable(string),
    level: nullable(number),
    recipient: fields({ kind: string, name: string }),
    channel: string,
    content: object,
    held: nullable(string),
  },
  ATTEMPT: { n: number, at_ms: number, outcome: oneOf(['delivered', 'failed']), status: nullable(number), detail: string, next_at_ms: nullable(number) },
  GAVE_UP: { at_ms: number, attempts: number, reason: string },
  EPOCH: {
    epoch: number,
    at_ms: number,
    previous: nullable(fields({ origin: string, size: number, head: string, note: string })),
    stripe: object,
    key_id: string,
    signature: string,
  },
  CONFIG: {
    at_ms: number,
    sha256: string,
    people_added: listOf(string),
    people_removed: listOf(string),
    joined: listOf(membership),
    left: listOf(membership),
    cause: optional(oneOf(CONFIG_CAUSES)),
    compared_with: optional(nullable(string)),
    people: optional(listOf(string)),
    members: optional(listOf(membership)),
  },
};

function fieldsHold(value: JsonObject, shape: Record<string, Check>): boolean {
  for (const field in shape) if (!shape[field]!(value[field])) return false;
  return true;
}

/** The first field of `value` that does not hold its kind's shape, or null when the entry is well formed. */
export function entryShapeProblem(value: JsonObject): string | null {
  const kind = ENTRY_KINDS.find((known) => known === value.kind);
  if (kind === undefined) return `unknown kind ${JSON.stringify(value.kind)}`;
  if (typeof value.effect_id !== 'string' || !number(value.ts_ms) || !(value.prev === null || typeof value.prev === 'string') || typeof value.hash !== 'string') {
    return 'envelope (effect_id, ts_ms, prev, hash) is malformed';
  }
  const shape = SHAPES[kind];
  for (const field in shape) if (!shape[field]!(value[field])) return `${kind}.${field} is ${value[field] === undefined ? 'missing' : 'malformed'}`;
  return null;
}

/** True when `value` is a well-formed entry of its kind. */
export function isEntry(value: Json): value is Entry & JsonObject {
  return isJsonObject(value) && entryShapeProblem(value) === null;
}

/** True when the entry is of `kind`; it narrows the entry's type. */
export function isKind<K extends EntryKind>(entry: Entry, kind: K): entry is EntryOf<K> {
  return entry.kind === kind;
}
