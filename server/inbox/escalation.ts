import { type Change, DECIDED_FIELDS, ESCALATED_FIELDS, ESCALATED_OPTIONAL_FIELDS, type Entry, type FieldsOf, type Repair } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject, jsonEqual } from '../../shared/json.ts';
import { allOf, explainChain, lastOf } from '../journal/chain.ts';
import { diffFacts } from '../gate/premises.ts';

/** The fields of an ESCALATED entry. */
export type EscalationFields = FieldsOf<'ESCALATED'>;

/** The fields of a DECIDED entry. */
export type DecisionFields = FieldsOf<'DECIDED'>;

/** Assert an entry carries exactly its kind's fields (and any of `optional`): a missing or extra key is our bug, not the world's. */
function assertExactFields(kind: string, fields: object, expected: readonly string[], optional: readonly string[] = []): void {
  const got = Object.keys(fields)
    .filter((key) => !optional.includes(key))
    .sort()
    .join(',');
  const want = [...expected].sort().join(',');
  if (got !== want) throw new Error(`${kind} fields must be exactly [${want}], got [${got}]`);
}

/**
 * An ESCALATED body, checked for its exact field set. `approvals_required` is written only when
 * more than one person must approve, so an escalation needing one reads as it always did.
 */
export function escalationRecord(fields: EscalationFields): EscalationFields {
  const { approvals_required, ...rest } = fields;
  const record: EscalationFields = approvals_required !== undefined && approvals_required <= 1 ? rest : fields;
  assertExactFields('ESCALATED', record, ESCALATED_FIELDS, ESCALATED_OPTIONAL_FIELDS);
  return record;
}

/** A DECIDED body, checked for its exact field set. */
export function decisionRecord(fields: DecisionFields): DecisionFields {
  assertExactFields('DECIDED', fields, DECIDED_FIELDS);
  return fields;
}

/** What a person must be told about a refused or unknowable chain (inbox §7 step 4). */
export interface OwedExplanation {
  reason: string;
  detail: Json;
  changes: Change[];
  repairs: Repair[];
}

/**
 * The facts the request was asked on: those its payload was bound with, or, for a request that
 * waited its turn for Stripe (bound with none), the first read made for it. Empty when none was read.
 */
export function askedOnFacts(chain: readonly Entry[]): JsonObject {
  const first = allOf(chain, 'PROPOSED').find((e) => isJsonObject(e.premises));
  return first && isJsonObject(first.premises) ? first.premises : {};
}

/**
 * What changed since the request was asked, against facts read now: the one diff a person, the
 * agent and its tools are shown. The item page diffs the same two reads, so a send refused on
 * facts a re-shown item already held (nothing moved since the approval, the amount no longer fits)
 * still tells the agent what changed since it asked, as the page does.
 */
export function changesSinceAsked(chain: readonly Entry[], factsNow: JsonObject): Change[] {
  return diffFacts(askedOnFacts(chain), factsNow);
}

/**
 * Explain a chain that owes an escalation, against the facts read now. The changes are those
 * since the request was asked (`changesSinceAsked`); repairs are kept only while the world is
 * still the one they were computed on.
 */
export function owedExplanation(chain: readonly Entry[], factsNow: JsonObject, refine: (reason: string) => string): OwedExplanation {
  const explained = explainChain(chain);
  const reason = refine(explained?.reason ?? 'refused');
  const then: JsonObject = { ...shownFacts(chain) };
  for (const change of explained?.changes ?? []) then[change.field] = change.now;
  const changes = changesSinceAsked(chain, factsNow);
  const repairs = jsonEqual(factsNow, then) ? (explained?.repairs ?? []) : [];
  return { reason, detail: explained?.status ?? 'REFUSED', changes, repairs };
}

/** The facts a person last saw: the latest escalation's, else the first proposal's premises. */
export function shownFacts(chain: readonly Entry[]): JsonObject {
  const latest = lastOf(chain, 'ESCALATED');
  if (latest && isJsonObject(latest.facts)) return latest.facts;
  const first = chain.find((e) => e.kind === 'PROPOSED');
  return first && isJsonObject(first.premises) ? first.premises : {};
}

/** The route an SLA move follows: its chain of groups and its SLA. */
export interface SlaRoute {
  chain: readonly string[];
  slaMs: number | null;
}

/**
 * The escalations an overdue item owes at `nowMs` (inbox §10): one per missed deadline, each
 * deadline chained from the previous one so an outage catches up on the original schedule, up
 * the chain of groups, and one top-of-chain breach with no further deadline.
 */
export function overdueEscalations(
  latest: EscalationFields,
  route: SlaRoute,
  factsNow: JsonObject,
  nowMs: number,
  membersOf: (group: string) => readonly string[],
): EscalationFields[] {
  const steps: EscalationFields[] = [];
  let current = latest;
  while (current.due_ms !== null && current.due_ms <= nowMs) {
    const up = current.level + 1 < route.chain.length;
    const group = up ? route.chain[current.level + 1]! : current.group;
    const level = up ? current.level + 1 : current.level;
    const changes = diffFacts(current.facts, factsNow);
    const next = escalationRecord({
      at_ms: nowMs,
      reason: current.reason,
      why: current.why,
      detail: current.detail,
      failed_rules: current.failed_rules ?? [],
      facts: factsNow,
      changes: changes.length ? changes : current.changes,
      repairs: jsonEqual(factsNow, current.facts) ? current.repairs : [],
      route: current.route,
      routing: current.routing ?? null,
      group,
      routed_to: [...membersOf(group)].sort(),
      level,
      due_ms: up && route.slaMs !== null ? current.due_ms + route.slaMs : null,
      breach: true,
      // Pinned when routed: a move up the chain keeps it (and starts the count of approvals again).
      ...(current.approvals_required === undefined ? {} : { approvals_required: current.approvals_required }),
    });
    steps.push(next);
    current = next;
  }
  return steps;
}
