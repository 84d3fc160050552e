import { isJsonObject, type Json, type JsonObject, jsonEqual } from '../../shared/json.ts';
import { canonical } from '../../shared/receipts/canonical.ts';
import { checkCoApprovals, checkDecision, checkPersonSend, DecisionTally, leaseHeld, type ProblemSink, premisesHeld, type Send } from '../../shared/receipts/passes.ts';
import { sentRefund, type VerifyProblemCode } from '../../shared/receipts/report.ts';
import { entryHashHolds } from '../journal/hash.ts';

// The receipt verifier is shared/receipts/verify.ts, one for the server, the command line and the
// browser; it is re-exported here for the server's routes. What stays here is ChainCheck: the
// same semantic passes, fed entry by entry and synchronously, for chains the journal has read.

export { type ReceiptKeys, verifyReceipt } from '../../shared/receipts/verify.ts';

/** The entry's hash matches its content; content with no canonical form (a lone surrogate) was never written by a journal. */
function hashHolds(entry: JsonObject): boolean {
  try {
    return entryHashHolds(entry);
  } catch {
    return false;
  }
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
  #tally: DecisionTally | null = null;
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
      this.#tally ??= new DecisionTally();
      this.#tally.escalated(entry);
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
    this.#tally ??= new DecisionTally();
    checkDecision(index, entry, this.#latest, this.#tally.decide(entry), personProblems);
    this.#closed ||= entry.decision === 'reject' || entry.decision === 'repair';
    this.#problems += personProblems.count;
  }

  /** A DISPATCHED in the people pass, through the same checks. */
  #personSend(index: number, entry: JsonObject): void {
    personProblems.count = 0;
    const state = { latest: this.#latest, closed: this.#closed, answer: this.#answerTo(this.#latest?.hash) };
    checkPersonSend(index, entry, state, personProblems);
    if (this.#latest !== null) checkCoApprovals(index, entry, this.#latest, this.#tally?.approvalsOf(this.#latest.hash) ?? [], personProblems);
    this.#problems += personProblems.count;
  }

  #answerTo(escalation: Json | undefined): JsonObject | undefined {
    return this.#tally?.answerTo(escalation);
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
