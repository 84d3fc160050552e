import { createPublicKey, KeyObject, verify as verifySignatureBytes } from 'node:crypto';
import { isJsonObject, type Json, type JsonObject, jsonEqual, plain } from '../../shared/json.ts';
import { finalStatus } from '../journal/confirmations.ts';
import { canonical, hashEntry } from '../journal/hash.ts';
import {
  type ConfirmationItem,
  type EscalationHistoryItem,
  receiptSigningInput,
  sentRefund,
  VERIFY_PROBLEM_MESSAGES,
  type VerifyProblem,
  type VerifyProblemCode,
  type VerifyReport,
} from './receipts.ts';

/** Verification keys: one public key, or published keys by key id (KeyObject or PEM). */
export type VerificationKeys = ReadonlyMap<string, KeyObject | string> | KeyObject;

interface ReadReceipt {
  effectId: string;
  keyId: string | null;
  signature: Json | undefined;
  entries: JsonObject[];
}

/** A send the claims must hold for: the checks recorded when it fired, and the payload it carried. */
interface Send {
  index: number;
  checks: Json;
  effect: Json;
}

/** Where the passes report what they find: a full list for a report, or a count for a check that only needs `valid`. */
interface ProblemSink {
  readonly count: number;
  add(code: VerifyProblemCode, message?: string): void;
  at(index: number, entry: JsonObject | undefined, code: VerifyProblemCode, message?: string): void;
}

/** Problems in the order they are found; `valid` is this list being empty. */
class Problems implements ProblemSink {
  readonly list: VerifyProblem[] = [];

  get count(): number {
    return this.list.length;
  }

  /** A problem with the whole receipt. */
  add(code: VerifyProblemCode, message: string = VERIFY_PROBLEM_MESSAGES[code]): void {
    this.list.push({ code, message });
  }

  /** A problem with one entry, named by its index and kind. */
  at(index: number, entry: JsonObject | undefined, code: VerifyProblemCode, message = VERIFY_PROBLEM_MESSAGES[code]): void {
    const kind = typeof entry?.kind === 'string' ? entry.kind : undefined;
    const where = `Entry ${index} (${kind ?? 'no kind'})`;
    this.list.push({ code, entry: index, ...(kind === undefined ? {} : { kind }), message: `${where} ${message}` });
  }
}

/**
 * Verify a receipt offline (spec §7): the chain, the signature when keys are given, the shape,
 * then what the entries prove (sent once, under live authority, on facts that held, by whom,
 * and what the target confirmed). Never throws on bad input: a malformed receipt is a report
 * with `valid: false` and a `malformed_receipt` problem.
 */
export function verifyReceipt(receipt: unknown, publicKeys?: VerificationKeys): VerifyReport {
  const read = readReceipt(receipt);
  if (!('entries' in read)) return malformedReport(read.effectId, read.keyId, read.message, publicKeys);
  const { effectId, entries } = read;
  const problems = new Problems();
  const tamperEvident = checkChain(effectId, entries, problems);
  const signed = publicKeys === undefined ? null : checkSignature(read, publicKeys, problems);
  if (entries.length === 0) problems.add('empty_receipt');
  else if (entries[0]?.kind !== 'PROPOSED') problems.at(0, entries[0], 'no_initial_proposal');
  const sends = walkSends(entries, problems);
  const people = walkPeople(entries, problems);
  const confirmations = walkConfirmations(entries, sends.openAtEnd, problems);
  const claims = judgeClaims(entries, sends, problems);
  return {
    effect_id: effectId,
    key_id: read.keyId,
    valid: problems.count === 0,
    tamper_evident: tamperEvident,
    signed,
    happened: claims.happened,
    happened_once: sends.once && !confirmations.multipleRefunds && !claims.multipleCommits,
    authorized_when_fired: claims.authorized,
    assumptions_held: claims.assumptionsHeld,
    refused: claims.happened === true ? null : sends.refused,
    evidence: sends.evidence,
    rechecked_at_recovery: sends.atRecovery,
    ...people,
    confirmed_by_target: confirmations.confirmedByTarget,
    confirmation: confirmations.confirmation,
    problems: problems.list,
  };
}

type Unreadable = { effectId: string | null; keyId: string | null; message: string };

/** The receipt as JSON, or why it is not one. A JSON round trip first, so nothing exotic reaches the passes. */
function readReceipt(receipt: unknown): ReadReceipt | Unreadable {
  let value: Json;
  try {
    value = plain(receipt);
  } catch (error) {
    return { effectId: null, keyId: null, message: `The receipt is not JSON (${error instanceof Error ? error.message : String(error)}).` };
  }
  if (!isJsonObject(value)) return { effectId: null, keyId: null, message: 'The receipt is not a JSON object.' };
  const effectId = typeof value.effect_id === 'string' ? value.effect_id : null;
  const keyId = typeof value.key_id === 'string' ? value.key_id : null;
  if (effectId === null) return { effectId, keyId, message: 'The receipt has no string effect_id.' };
  if (!Array.isArray(value.entries)) return { effectId, keyId, message: 'The receipt has no list of entries.' };
  const entries: JsonObject[] = [];
  for (const [index, entry] of value.entries.entries()) {
    if (!isJsonObject(entry)) return { effectId, keyId, message: `Entry ${index} of the receipt is not a JSON object.` };
    entries.push(entry);
  }
  return { effectId, keyId, signature: value.signature, entries };
}

function malformedReport(
  effectId: string | null,
  keyId: string | null,
  message: string,
  keys?: VerificationKeys,
): VerifyReport {
  return {
    effect_id: effectId,
    key_id: keyId,
    valid: false,
    tamper_evident: false,
    signed: keys === undefined ? null : false,
    happened: 'unknown',
    happened_once: false,
    authorized_when_fired: null,
    assumptions_held: null,
    refused: null,
    evidence: null,
    rechecked_at_recovery: null,
    approved_by: null,
    approval_verified: null,
    escalations: [],
    confirmed_by_target: null,
    confirmation: [],
    problems: [{ code: 'malformed_receipt', message }],
  };
}

/** Chain pass (§7.1): every entry is this effect's, unaltered, and linked to the one before it. */
function checkChain(effectId: string, entries: readonly JsonObject[], problems: Problems): boolean {
  const before = problems.count;
  let prev: string | null = null;
  for (const [index, entry] of entries.entries()) {
    if (entry.effect_id !== effectId) {
      problems.at(index, entry, 'foreign_entry', `belongs to effect ${String(entry.effect_id)}, not ${effectId}.`);
    }
    const linked = entry.prev === null || typeof entry.prev === 'string';
    if (typeof entry.hash !== 'string' || typeof entry.kind !== 'string' || !linked) {
      problems.at(index, entry, 'malformed_receipt');
    } else if (!hashHolds(entry)) {
      problems.at(index, entry, 'altered_entry');
    }
    if (linked && entry.prev !== prev) problems.at(index, entry, 'chain_break');
    prev = typeof entry.hash === 'string' ? entry.hash : null;
  }
  return problems.count === before;
}

function hashHolds(entry: JsonObject): boolean {
  try {
    return hashEntry(entry) === entry.hash;
  } catch {
    // Content with no canonical form (a lone surrogate) was never written by a journal.
    return false;
  }
}

/** Signature pass (§7.2): the key's Ed25519 signature over the effect id and the last entry's hash. */
function checkSignature(read: ReadReceipt, keys: VerificationKeys, problems: Problems): boolean {
  const key = keyFor(keys, read.keyId);
  if (typeof key === 'string') {
    problems.add('unknown_key', key);
    return false;
  }
  const lastHash = read.entries.at(-1)?.hash;
  const message = receiptSigningInput(read.effectId, typeof lastHash === 'string' ? lastHash : null);
  const signature = typeof read.signature === 'string' ? Buffer.from(read.signature, 'base64url') : Buffer.alloc(0);
  // Only the canonical base64url spelling counts, so one signature has exactly one accepted form.
  const canonicalSpelling = signature.length > 0 && signature.toString('base64url') === read.signature;
  let signed = false;
  try {
    signed = canonicalSpelling && verifySignatureBytes(null, Buffer.from(message, 'utf8'), key, signature);
  } catch {
    signed = false;
  }
  if (!signed) problems.add('bad_signature');
  return signed;
}

/** The key to check with, or a sentence saying why there is none. */
function keyFor(keys: VerificationKeys, keyId: string | null): KeyObject | string {
  if (keys instanceof KeyObject) return keys;
  if (keyId === null) return 'The receipt names no key_id, so no published key can check its signature.';
  const key = keys.get(keyId);
  if (key === undefined) return `No published key has key_id ${keyId}.`;
  if (key instanceof KeyObject) return key;
  try {
    return createPublicKey(key);
  } catch {
    return `The key published as ${keyId} is not a readable public key.`;
  }
}

/** Send pass (§7.4): one walk that finds every send, whether each was allowed to fire, and what settled it. */
function walkSends(entries: readonly JsonObject[], problems: Problems) {
  const sends: Send[] = [];
  let once = true;
  let open = false;
  let authorizedSeen = false;
  let rejected = false;
  let effect: Json = {};
  let refused: Json = null;
  let evidence: Json = null;
  let atRecovery: Json = null;
  for (const [index, entry] of entries.entries()) {
    const flag = (code: VerifyProblemCode) => problems.at(index, entry, code);
    const resolves = entry.kind === 'REFUSED' && entry.resolves === true;
    if (entry.kind === 'ESCALATED') rejected = false;
    if (entry.kind === 'AUTHORIZED') authorizedSeen = true;
    if (entry.kind === 'REFUSED') refused = entry.reason ?? null;
    if (Object.hasOwn(entry, 'rechecked')) atRecovery = entry.rechecked ?? null;
    if (entry.kind === 'DISPATCHED') {
      if (open) flag('send_while_open');
      if (!authorizedSeen) flag('send_without_authorization');
      if (rejected) flag('send_after_target_failure');
      once &&= !open && !rejected;
      open = true;
      effect = entry.effect ?? {};
      sends.push({ index, checks: entry.checks ?? {}, effect });
    }
    if (entry.kind === 'COMMITTED') {
      if (!open) flag('orphan_commit');
      // A resend under the same idempotency key is another send, attested by what recovery rechecked.
      const resent = entry.via === 'retry-idempotent' || entry.via === 'recovery-reapply';
      if (resent) sends.push({ index, checks: entry.rechecked ?? {}, effect });
      evidence = truthy(entry.result) ? (entry.result ?? null) : (entry.found ?? null);
    }
    if (resolves && open) {
      rejected ||= entry.code === 'target_error';
      // The refused send never landed, so its checks attest to nothing that fired.
      sends.pop();
    }
    if (entry.kind === 'COMMITTED' || entry.kind === 'AMBIGUOUS' || resolves) open = false;
  }
  return { sends, once, refused, evidence, atRecovery, openAtEnd: open };
}

/** People pass (§7.5): a send under escalation carries the routed person's approval of the latest escalation. */
function walkPeople(entries: readonly JsonObject[], problems: Problems) {
  const before = problems.count;
  const escalations: EscalationHistoryItem[] = [];
  const historyByHash = new Map<Json, EscalationHistoryItem>();
  const answered = new Map<string, JsonObject>();
  const answerTo = (escalation: Json | undefined) => answered.get(canonical(escalation ?? null));
  let latest: JsonObject | null = null;
  let closed = false;
  let sent: Json = null;
  let landed: Json | undefined;
  for (const [index, entry] of entries.entries()) {
    if (entry.kind === 'ESCALATED') {
      latest = entry;
      const item = escalationItem(entry);
      escalations.push(item);
      historyByHash.set(entry.hash ?? null, item);
    } else if (entry.kind === 'DECIDED') {
      checkDecision(index, entry, latest, answerTo(entry.escalation) !== undefined, problems);
      if (answerTo(entry.escalation) === undefined) answered.set(canonical(entry.escalation ?? null), entry);
      const item = historyByHash.get(entry.escalation ?? null);
      if (item !== undefined && item.decision === null) {
        item.decision = { by: entry.by ?? null, decision: entry.decision ?? null, at_ms: entry.at_ms ?? null };
      }
      closed ||= entry.decision === 'reject' || entry.decision === 'repair';
    } else if (entry.kind === 'DISPATCHED') {
      sent = entry.lease ?? null;
      checkPersonSend(index, entry, { latest, closed, answer: answerTo(latest?.hash) }, problems);
    } else if (entry.kind === 'COMMITTED' && landed === undefined) {
      landed = sent;
    }
  }
  const approvedBy = isJsonObject(landed) && typeof landed.by === 'string' && landed.by !== 'policy' ? landed.by : null;
  return {
    approved_by: approvedBy,
    approval_verified: problems.count > before ? false : escalations.length > 0 ? true : null,
    escalations,
  };
}

function escalationItem(entry: JsonObject): EscalationHistoryItem {
  return {
    at_ms: entry.at_ms ?? null,
    reason: entry.reason ?? null,
    group: entry.group ?? null,
    routed_to: entry.routed_to ?? null,
    level: entry.level ?? null,
    breach: entry.breach ?? null,
    changes: entry.changes ?? null,
    repairs: Array.isArray(entry.repairs) ? entry.repairs.length : 0,
    decision: null,
  };
}

/** A decision answers the latest escalation, by a member of the group it was routed to, once. */
function checkDecision(index: number, entry: JsonObject, latest: JsonObject | null, decidedBefore: boolean, problems: ProblemSink) {
  const members = Array.isArray(entry.members) ? entry.members : [];
  if (latest === null || entry.escalation !== latest.hash) problems.at(index, entry, 'decision_not_for_latest');
  else if (entry.group !== latest.group || !members.includes(entry.by ?? null)) problems.at(index, entry, 'decider_not_routed');
  if (decidedBefore) problems.at(index, entry, 'decided_twice');
}

/** A send after an escalation carries an approval of the latest one, matching its decision, on the facts shown. */
function checkPersonSend(
  index: number,
  entry: JsonObject,
  state: { latest: JsonObject | null; closed: boolean; answer: JsonObject | undefined },
  problems: ProblemSink,
): void {
  const { latest, answer } = state;
  const lease = entry.lease;
  if (state.closed) problems.at(index, entry, 'sent_after_close');
  if (latest === null) {
    if (isJsonObject(lease) && Object.hasOwn(lease, 'escalation')) problems.at(index, entry, 'cites_missing_escalation');
    return;
  }
  if (!isJsonObject(lease) || lease.escalation !== latest.hash) {
    problems.at(index, entry, 'sent_without_decision');
  } else if (
    answer?.decision !== 'approve' ||
    !jsonEqual(answer.by, lease.by) ||
    !jsonEqual(answer.at_ms, lease.at_ms) ||
    !jsonEqual(answer.group, lease.group)
  ) {
    problems.at(index, entry, 'decision_mismatch');
  }
  if (!jsonEqual(entry.premises, latest.facts)) problems.at(index, entry, 'facts_not_seen_by_approver');
}

/** Confirmation pass (§7.6): what the target itself reported, checked against what was sent and committed. */
function walkConfirmations(entries: readonly JsonObject[], openAtEnd: boolean, problems: Problems) {
  const refund = sentRefund(entries);
  const refunds = new Set<string>();
  const confirmation: ConfirmationItem[] = [];
  let sent: JsonObject | undefined;
  for (const [index, entry] of entries.entries()) {
    if (entry.kind === 'DISPATCHED') sent = isJsonObject(entry.effect) ? entry.effect : {};
    if (entry.kind !== 'CONFIRMED') continue;
    if (sent === undefined) problems.at(index, entry, 'confirmation_without_send');
    else if (Object.hasOwn(sent, 'amount') && !jsonEqual(sent.amount, entry.amount)) {
      problems.at(index, entry, 'confirmed_amount_mismatch');
    }
    if (refund !== null && entry.refund !== refund) problems.at(index, entry, 'confirmed_other_refund');
    refunds.add(canonical(entry.refund ?? null));
    const { via = null, event = null, refund: confirmed = null, status = null } = entry;
    confirmation.push({ via, event, refund: confirmed, status });
  }
  const multipleRefunds = refunds.size > 1;
  if (multipleRefunds) problems.add('confirmed_multiple_refunds', `The target confirmed ${refunds.size} different refunds for one effect.`);
  const has = (kind: string) => entries.some((entry) => entry.kind === kind);
  const refusedToLand = entries.some((entry) => entry.kind === 'REFUSED' && entry.resolves === true);
  const neverLanded = !openAtEnd && !has('COMMITTED') && !has('AMBIGUOUS') && refusedToLand;
  if (neverLanded && confirmation.some((item) => item.status === 'succeeded')) problems.add('confirmed_never_landed');
  const standing = finalStatus(confirmation.map(({ status }) => (typeof status === 'string' ? status : canonical(status))));
  let confirmedByTarget: boolean | 'pending' | null = standing === null ? null : 'pending';
  if (standing === 'succeeded') confirmedByTarget = true;
  if (standing === 'failed' || standing === 'canceled') confirmedByTarget = false;
  return { confirmedByTarget, confirmation, multipleRefunds };
}

/** Claims (§7.7): happened, once, under live authority, on facts that held, for every send that survived. */
function judgeClaims(entries: readonly JsonObject[], walk: { sends: readonly Send[]; openAtEnd: boolean }, problems: Problems) {
  const { sends } = walk;
  const commits = entries.filter((entry) => entry.kind === 'COMMITTED').length;
  if (commits > 1) problems.add('multiple_commits', `The receipt has ${commits} COMMITTED entries; an effect commits at most once.`);
  const ambiguous = entries.some((entry) => entry.kind === 'AMBIGUOUS');
  for (const send of sends) if (!leaseHeld(send)) problems.at(send.index, entries[send.index], 'lease_not_attested');
  for (const send of sends) if (!premisesHeld(send)) problems.at(send.index, entries[send.index], 'premises_not_attested');
  return {
    happened: commits > 0 ? true : ambiguous || walk.openAtEnd ? ('unknown' as const) : false,
    multipleCommits: commits > 1,
    authorized: sends.length === 0 ? null : sends.every(leaseHeld),
    assumptionsHeld: sends.length === 0 ? null : sends.every(premisesHeld),
  };
}

/** The lease was live, unused elsewhere, unrevoked and large enough for the amount when the send fired. */
function leaseHeld({ checks, effect }: Send): boolean {
  if (!isJsonObject(checks) || checks.lease_live !== true || truthy(checks.use_problems)) return false;
  const lease = checks.lease;
  if (!isJsonObject(lease)) return true;
  if (truthy(lease.problems) || (lease.revoked !== undefined && lease.revoked !== null)) return false;
  const maxCents = lease.max_cents;
  if (maxCents === undefined || maxCents === null) return true;
  const amount = isJsonObject(effect) ? effect.amount : undefined;
  // typeof rules out booleans: `true` is never an amount of cents.
  return typeof maxCents === 'number' && typeof amount === 'number' && Number.isInteger(amount) && amount <= maxCents;
}

/** Every premise was evaluated and none was violated: a missing list proves nothing. */
function premisesHeld({ checks }: Send): boolean {
  return isJsonObject(checks) && Array.isArray(checks.violations) && checks.violations.length === 0;
}

/** Truthiness as the recorded fields mean it: null, false, 0, "" and empty lists or objects say nothing. */
function truthy(value: Json | undefined): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

/** Counts problems where only `valid` is wanted: no messages are built. */
class ProblemCount implements ProblemSink {
  count = 0;

  add(_code: VerifyProblemCode): void {
    this.count += 1;
  }

  at(_index: number, _entry: JsonObject | undefined, _code: VerifyProblemCode): void {
    this.count += 1;
  }
}

/** What the shared checks of the people pass find for one entry; read and reset at once, so one serves every walk. */
const personProblems = new ProblemCount();

/**
 * The semantic passes of `verifyReceipt` folded into one walk, fed entry by entry, for entries
 * the journal has already checked: each was parsed from its stored JSON and its hash was found to
 * hold when it was read. So there is no JSON round trip and no re-hash (the costly part of a
 * verification), while the chain links and every pass of sends, people, confirmations and claims
 * still run. Only what the passes still need is kept, so a projection can hold one per chain and
 * feed it as entries arrive. For such entries `valid` equals `verifyReceipt(...).valid`.
 */
export class ChainCheck {
  readonly #rehash: boolean;
  #problems = 0;
  #index = 0;
  #prevHash: string | null = null;
  // Send pass (§7.4).
  #open = false;
  #authorizedSeen = false;
  #targetRejected = false;
  #effect: Json = {};
  /**
   * Sends that still stand but whose lease or premises were not attested. A send is only ever
   * withdrawn (refused by the target) while it is the latest one and still open, so knowing
   * whether the latest one failed is enough to withdraw it.
   */
  #sendsUnattested = 0;
  #latestSendUnattested = false;
  #commits = 0;
  #ambiguous = false;
  #refusedToLand = false;
  // People pass (§7.5).
  #latest: JsonObject | null = null;
  #answered: Map<string, JsonObject> | null = null;
  #closed = false;
  // Confirmation pass (§7.6).
  #sent: JsonObject | undefined = undefined;
  /** The refund the first COMMITTED names (null when it names none); undefined before it. */
  #refund: string | null | undefined = undefined;
  #confirmedRefunds: Set<string> | null = null;
  #confirmedSucceeded = false;

  /** With `rehash`, each entry's hash is checked too, for entries that did not come through a journal read. */
  constructor(
    readonly effectId: string,
    options: { rehash?: boolean } = {},
  ) {
    this.#rehash = options.rehash ?? false;
  }

  /**
   * Walk the next entry of the chain, in journal order. Each pass keeps its own state, so an
   * entry goes through them pass by pass, and only through the passes its kind concerns.
   */
  push(entry: JsonObject): void {
    const index = this.#index;
    this.#index += 1;
    const kind = entry.kind;
    this.#checkLink(index, entry, kind);
    if (kind === 'DISPATCHED') {
      this.#send(entry);
      this.#personSend(index, entry);
      this.#sent = isJsonObject(entry.effect) ? entry.effect : {};
    } else if (kind === 'COMMITTED') this.#commit(entry);
    else if (kind === 'REFUSED') this.#refuse(entry);
    else if (kind === 'AMBIGUOUS') {
      this.#ambiguous = true;
      this.#open = false;
    } else if (kind === 'AUTHORIZED') this.#authorizedSeen = true;
    else if (kind === 'ESCALATED') {
      this.#targetRejected = false;
      this.#latest = entry;
    } else if (kind === 'DECIDED') this.#decide(index, entry);
    else if (kind === 'CONFIRMED') this.#confirm(entry);
  }

  /** What `verifyReceipt` would report as `valid` for the entries pushed so far. */
  get valid(): boolean {
    if (this.#problems > 0 || this.#index === 0 || this.#commits > 1 || this.#sendsUnattested > 0) return false;
    const refunds = this.#confirmedRefunds;
    if (refunds !== null) {
      if (refunds.size > 1) return false;
      const refund = this.#refund ?? null;
      // Canonical JSON is one-to-one, so a confirmation names this refund exactly when its canonical forms agree.
      if (refund !== null && !refunds.has(canonical(refund))) return false;
      const neverLanded = !this.#open && this.#commits === 0 && !this.#ambiguous && this.#refusedToLand;
      if (neverLanded && this.#confirmedSucceeded) return false;
    }
    return true;
  }

  /** Chain pass (§7.1), the re-hash only if asked: this effect's entries, linked in order, the first a PROPOSED. */
  #checkLink(index: number, entry: JsonObject, kind: Json | undefined): void {
    if (entry.effect_id !== this.effectId) this.#problems += 1;
    const prev = entry.prev;
    const hash = entry.hash;
    const linked = prev === null || typeof prev === 'string';
    if (typeof hash !== 'string' || typeof kind !== 'string' || !linked) this.#problems += 1;
    else if (this.#rehash && !hashHolds(entry)) this.#problems += 1;
    if (linked && prev !== this.#prevHash) this.#problems += 1;
    this.#prevHash = typeof hash === 'string' ? hash : null;
    if (index === 0 && kind !== 'PROPOSED') this.#problems += 1;
  }

  /** A DISPATCHED in the send pass (§7.4): send_while_open, send_without_authorization, send_after_target_failure. */
  #send(entry: JsonObject): void {
    if (this.#open) this.#problems += 1;
    if (!this.#authorizedSeen) this.#problems += 1;
    if (this.#targetRejected) this.#problems += 1;
    this.#open = true;
    this.#effect = entry.effect ?? {};
    this.#recordSend({ index: 0, checks: entry.checks ?? {}, effect: this.#effect });
  }

  /** A COMMITTED: orphan_commit; a resend under the same key is another send to judge. */
  #commit(entry: JsonObject): void {
    if (!this.#open) this.#problems += 1;
    if (this.#commits === 0) this.#refund = sentRefund([entry]);
    this.#commits += 1;
    const resent = entry.via === 'retry-idempotent' || entry.via === 'recovery-reapply';
    if (resent) this.#recordSend({ index: 0, checks: entry.rechecked ?? {}, effect: this.#effect });
    this.#open = false;
  }

  /** A REFUSED: one that resolves an open send withdraws it, since it never landed. */
  #refuse(entry: JsonObject): void {
    if (entry.resolves !== true) return;
    this.#refusedToLand = true;
    if (this.#open) {
      this.#targetRejected ||= entry.code === 'target_error';
      if (this.#latestSendUnattested) this.#sendsUnattested -= 1;
      this.#latestSendUnattested = false;
    }
    this.#open = false;
  }

  /** Claims (§7.7) judged on a send as it is recorded. */
  #recordSend(send: Send): void {
    this.#latestSendUnattested = !leaseHeld(send) || !premisesHeld(send);
    if (this.#latestSendUnattested) this.#sendsUnattested += 1;
  }

  /** A DECIDED in the people pass (§7.5), through the same checks. */
  #decide(index: number, entry: JsonObject): void {
    personProblems.count = 0;
    const decidedBefore = this.#answerTo(entry.escalation) !== undefined;
    checkDecision(index, entry, this.#latest, decidedBefore, personProblems);
    if (!decidedBefore) {
      this.#answered ??= new Map();
      this.#answered.set(canonical(entry.escalation ?? null), entry);
    }
    this.#closed ||= entry.decision === 'reject' || entry.decision === 'repair';
    this.#problems += personProblems.count;
  }

  /** A DISPATCHED in the people pass, through the same checks. */
  #personSend(index: number, entry: JsonObject): void {
    personProblems.count = 0;
    const state = { latest: this.#latest, closed: this.#closed, answer: this.#answerTo(this.#latest?.hash) };
    checkPersonSend(index, entry, state, personProblems);
    this.#problems += personProblems.count;
  }

  #answerTo(escalation: Json | undefined): JsonObject | undefined {
    return this.#answered?.get(canonical(escalation ?? null));
  }

  /** A CONFIRMED in the confirmation pass (§7.6); what depends on the whole chain is judged in `valid`. */
  #confirm(entry: JsonObject): void {
    const sent = this.#sent;
    // confirmation_without_send, confirmed_amount_mismatch.
    if (sent === undefined) this.#problems += 1;
    else if (Object.hasOwn(sent, 'amount') && !jsonEqual(sent.amount, entry.amount)) this.#problems += 1;
    this.#confirmedRefunds ??= new Set();
    this.#confirmedRefunds.add(canonical(entry.refund ?? null));
    if (entry.status === 'succeeded') this.#confirmedSucceeded = true;
  }
}

/**
 * Verify a chain read back from the journal, whose entries' hashes were checked on the way in:
 * the same `valid` as `verifyReceipt({ effect_id, entries })` for such entries, at the cost of the
 * semantic passes alone. A receipt from outside goes through `verifyReceipt`.
 */
export function verifyCheckedChain(effectId: string, entries: readonly JsonObject[]): boolean {
  const check = new ChainCheck(effectId);
  for (const entry of entries) check.push(entry);
  return check.valid;
}
