import type { DecisionRecord, ExportRecords, ReceiptRecord } from './records.ts';
import { EXPORT_VERSION } from './limits.ts';

// SIEM lines in ArcSight's Common Event Format, one line per receipt and one per decision:
// CEF:Version|Device Vendor|Device Product|Device Version|Signature ID|Name|Severity|Extension.
// Every value is escaped as the format says, so no value (a rejection's reason is free text a
// person typed) can end a field, forge a key or start a line of its own.

/** A header field: `\` and `|` escaped; a line break, which the header may not hold, becomes a space. */
export function escapeCefHeader(value: string): string {
  return value.replace(/[\\|]/g, (c) => `\\${c}`).replace(/\r\n|[\r\n]/g, ' ');
}

/** An extension value: `\` and `=` escaped, line breaks written as `\n` and `\r`. */
export function escapeCefValue(value: string): string {
  return value.replace(/[\\=]/g, (c) => `\\${c}`).replace(/\n/g, '\\n').replace(/\r/g, '\\r');
}

/** An extension value read back: the inverse of `escapeCefValue`. */
export function unescapeCefValue(value: string): string {
  return value.replace(/\\([\\=nr])/g, (_match, c: string) => (c === 'n' ? '\n' : c === 'r' ? '\r' : c));
}

/** Extension pairs; a custom field (cs1, cn1, flexString1) names its label, written just before it. */
type Pairs = ([key: string, value: string | number | null] | [key: string, value: string | number | null, label: string])[];

function line(signatureId: string, name: string, severity: number, pairs: Pairs): string {
  const header = ['CEF:0', 'Interlock', 'Interlock', EXPORT_VERSION, signatureId, name, String(severity)].map(escapeCefHeader);
  const extension: string[] = [];
  for (const [key, value, label] of pairs) {
    if (value === null) continue;
    if (label !== undefined) extension.push(`${key}Label=${escapeCefValue(label)}`);
    extension.push(`${key}=${escapeCefValue(String(value))}`);
  }
  return `${header.join('|')}|${extension.join(' ')}`;
}

/**
 * How loud a receipt is: one that does not verify is the loudest; one nobody can know was sent
 * next; a refusal that nothing sent afterwards is a warning, whatever state it ended in (the
 * line's `act` says which); a rejection is a notice; a refund sent is routine.
 */
export function receiptSeverity(receipt: ReceiptRecord): number {
  if (!receipt.verified) return 10;
  const status = receipt.status ?? '';
  if (status === 'AMBIGUOUS' || status.startsWith('UNRESOLVED:')) return 8;
  if (status.startsWith('REFUSED:') || (receipt.refusal !== null && receipt.amount_sent_cents === null)) return 5;
  if (status === 'CLOSED') return 4;
  return 3;
}

function receiptLine(receipt: ReceiptRecord): string {
  return line(`receipt:${receipt.status ?? 'UNREADABLE'}`, 'Refund receipt', receiptSeverity(receipt), [
    ['externalId', receipt.id],
    ['rt', receipt.last_at_ms],
    ['cat', 'receipt'],
    ['act', receipt.status],
    ['outcome', receipt.verified ? 'verified' : 'unverified'],
    ['suser', receipt.agent],
    ['duser', receipt.authority],
    ['cs1', receipt.effect_id, 'effectId'],
    ['cs2', receipt.request_id, 'requestId'],
    ['cs3', receipt.payment_intent, 'paymentIntent'],
    ['cs4', receipt.currency, 'currency'],
    ['cs5', receipt.refund, 'refund'],
    ['cs6', receipt.confirmation, 'confirmation'],
    ['cn1', receipt.amount_asked_cents, 'amountAskedCents'],
    ['cn2', receipt.amount_sent_cents, 'amountSentCents'],
    ['flexString1', receipt.refusal, 'refusal'],
    ['reason', receipt.verify_problems.length === 0 ? null : receipt.verify_problems.join('; ')],
  ]);
}

function decisionLine(decision: DecisionRecord): string {
  return line(`decision:${decision.decision}`, 'Approver decision', decision.verified ? 3 : 10, [
    ['externalId', decision.id],
    ['rt', decision.decided_at_ms],
    ['cat', 'decision'],
    ['act', decision.decision],
    ['outcome', decision.verified ? 'verified' : 'unverified'],
    ['duser', decision.decided_by],
    ['msg', decision.reason],
    ['cs1', decision.effect_id, 'effectId'],
    ['cs2', decision.request_id, 'requestId'],
    ['cs3', decision.repair_request_id, 'repairRequestId'],
    ['cs4', decision.currency, 'currency'],
    ['cs5', decision.group_name, 'group'],
    ['cn1', decision.amount_asked_cents, 'amountAskedCents'],
    ['reason', decision.verify_problems.length === 0 ? null : decision.verify_problems.join('; ')],
  ]);
}

/** The CEF lines of one receipt: the receipt's, then one per decision of the period, each with its record id. */
export function cefLines(records: ExportRecords): { id: string; line: string }[] {
  return [
    { id: records.receipt.id, line: receiptLine(records.receipt) },
    ...records.decisions.map((decision) => ({ id: decision.id, line: decisionLine(decision) })),
  ];
}

/** The record id a CEF line carries: `externalId`, always the extension's first key. */
export function cefLineId(text: string): string | null {
  let pipes = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '|' && ++pipes === 7) return /^externalId=([^ \\]+)/.exec(text.slice(i + 1))?.[1] ?? null;
  }
  return null;
}
