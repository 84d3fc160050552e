import { createHash } from 'node:crypto';
import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';
import { EXPORT_VERSION, exportLimits } from './limits.ts';
import type { ExportRecords } from './records.ts';
import { effectAmountOf } from '../refunds/effect.ts';

// OpenTelemetry traces in the OTLP/HTTP JSON encoding (opentelemetry-proto, ExportTraceServiceRequest),
// written by hand: the @opentelemetry exporters of today need Node 22.15 and Interlock runs on 20.
// One span per receipt, with one event per journal entry. Ids are derived from the journal, not
// drawn at random: the trace id from the effect, the span id from the receipt's version, so
// sending a receipt again gives the same span and a receiver can drop the copy.

/** An OTLP attribute value (AnyValue): int64 is a decimal string, as proto3's JSON mapping writes it. */
export type OtlpValue = { stringValue: string } | { intValue: string } | { boolValue: boolean };
/** An OTLP attribute (KeyValue). */
export interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
/** An OTLP span event. */
export interface OtlpEvent {
  timeUnixNano: string;
  name: string;
  attributes: OtlpAttribute[];
}
/** An OTLP span, with the fields this export fills. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  name: string;
  kind: 1;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  events: OtlpEvent[];
  status: { code: 1 } | { code: 2; message: string };
}
/** The body POSTed to `/v1/traces` (ExportTraceServiceRequest). */
export interface OtlpRequest {
  resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { scope: { name: string; version: string }; spans: OtlpSpan[] }[] }[];
}

/** Span kind INTERNAL: the receipt is Interlock's own work, neither a server nor a client call. */
const SPAN_KIND_INTERNAL = 1;
/** The attribute that names a span's record id, read back to skip what a file already holds. */
export const RECORD_ID_ATTRIBUTE = 'interlock.record_id';

function hexId(kind: string, value: string, hexChars: number): string {
  return createHash('sha256').update(`${kind}\0${value}`).digest('hex').slice(0, hexChars);
}

/** The trace of an effect: 16 bytes, the same for every version of its receipt. */
export function traceIdOf(effectId: string): string {
  return hexId('interlock.trace', effectId, 32);
}

/** The span of one receipt version: 8 bytes from its record id. */
export function spanIdOf(recordId: string): string {
  return hexId('interlock.span', recordId, 16);
}

function nanos(ms: number | null): string {
  return ms === null ? '0' : (BigInt(ms) * 1_000_000n).toString();
}

/** Attributes from pairs, leaving out what is unknown: OTLP has no null. */
function attributes(pairs: [string, string | number | boolean | null | undefined][]): OtlpAttribute[] {
  const out: OtlpAttribute[] = [];
  for (const [key, value] of pairs) {
    if (typeof value === 'string') out.push({ key, value: { stringValue: value } });
    else if (typeof value === 'number' && Number.isSafeInteger(value)) out.push({ key, value: { intValue: String(value) } });
    else if (typeof value === 'boolean') out.push({ key, value: { boolValue: value } });
  }
  return out;
}

const str = (value: Json | undefined): string | null => (typeof value === 'string' ? value : null);

/** One event per journal entry: its kind, hash and what the entry says about authority and outcome. */
function eventOf(entry: Json, fallbackMs: number | null): OtlpEvent {
  if (!isJsonObject(entry)) return { timeUnixNano: nanos(fallbackMs), name: 'UNREADABLE', attributes: [] };
  const e: JsonObject = entry;
  const lease = isJsonObject(e.lease) ? e.lease : null;
  const effect = isJsonObject(e.effect) ? e.effect : null;
  const result = isJsonObject(e.result) ? e.result : null;
  return {
    timeUnixNano: nanos(typeof e.ts_ms === 'number' ? e.ts_ms : fallbackMs),
    name: str(e.kind) ?? 'UNREADABLE',
    attributes: attributes([
      ['interlock.entry.hash', str(e.hash)],
      ['interlock.entry.prev', str(e.prev)],
      ['interlock.authority', e.kind === 'DISPATCHED' ? str(lease?.by) : null],
      ['interlock.amount_cents', e.kind === 'DISPATCHED' ? effectAmountOf(effect) : null],
      ['interlock.decided_by', e.kind === 'DECIDED' ? str(e.by) : null],
      ['interlock.decision', e.kind === 'DECIDED' ? str(e.decision) : null],
      ['interlock.group', e.kind === 'DECIDED' || e.kind === 'ESCALATED' ? str(e.group) : null],
      ['interlock.reason', e.kind === 'DECIDED' ? str(e.reason) : null],
      ['interlock.code', e.kind === 'REFUSED' || e.kind === 'AMBIGUOUS' ? str(e.code) : null],
      ['interlock.refund', e.kind === 'COMMITTED' ? str(result?.refund) : e.kind === 'CONFIRMED' ? str(e.refund) : null],
      ['interlock.confirmation', e.kind === 'CONFIRMED' ? str(e.status) : null],
    ]),
  };
}

/** The span of one receipt, with an event per entry; its status is an error when the receipt does not verify. */
export function otlpSpan(records: ExportRecords): OtlpSpan {
  const r = records.receipt;
  return {
    traceId: traceIdOf(r.effect_id),
    spanId: spanIdOf(r.id),
    name: `refund ${r.status ?? 'UNREADABLE'}`,
    kind: SPAN_KIND_INTERNAL,
    startTimeUnixNano: nanos(r.first_at_ms),
    endTimeUnixNano: nanos(r.last_at_ms),
    attributes: attributes([
      [RECORD_ID_ATTRIBUTE, r.id],
      ['interlock.effect_id', r.effect_id],
      ['interlock.request_id', r.request_id],
      ['interlock.agent', r.agent],
      ['interlock.payment_intent', r.payment_intent],
      ['interlock.currency', r.currency],
      ['interlock.amount_asked_cents', r.amount_asked_cents],
      ['interlock.amount_sent_cents', r.amount_sent_cents],
      ['interlock.status', r.status],
      ['interlock.refusal', r.refusal],
      ['interlock.authority', r.authority],
      ['interlock.refund', r.refund],
      ['interlock.confirmation', r.confirmation],
      ['interlock.last_hash', r.last_hash],
      ['interlock.key_id', r.key_id],
      ['interlock.verified', r.verified],
      ['interlock.verify_problems', r.verify_problems.length === 0 ? null : r.verify_problems.join('; ')],
    ]),
    events: records.entries.map((entry) => eventOf(entry, r.first_at_ms)),
    status: r.verified ? { code: 1 } : { code: 2, message: `the receipt does not verify: ${r.verify_problems.join('; ')}` },
  };
}

/**
 * The request body for these spans. The resource says only what Interlock knows of itself: no
 * cloud project or host attribute is invented for a deployment that did not name one.
 */
export function otlpRequest(spans: OtlpSpan[]): OtlpRequest {
  return {
    resourceSpans: [
      {
        resource: { attributes: attributes([['service.name', 'interlock'], ['service.version', EXPORT_VERSION]]) },
        scopeSpans: [{ scope: { name: 'interlock.export', version: EXPORT_VERSION }, spans }],
      },
    ],
  };
}

/** The record ids of the spans in one line of an OTLP file (one request per line, as a collector's file exporter writes). */
export function otlpLineIds(text: string): string[] {
  try {
    const request: OtlpRequest = JSON.parse(text);
    return request.resourceSpans.flatMap((rs) =>
      rs.scopeSpans.flatMap((ss) => ss.spans.flatMap((span) => span.attributes.filter((a) => a.key === RECORD_ID_ATTRIBUTE).map((a) => ('stringValue' in a.value ? a.value.stringValue : '')))),
    );
  } catch {
    return [];
  }
}

/** A receiver refused some or all of what was sent: the export failed. */
export class OtlpSendError extends Error {}

/**
 * POST one batch of spans to an OTLP/HTTP endpoint as JSON. Success is a 2xx whose body, if any,
 * reports no rejected spans: a partial success that rejected even one span is a failure, since
 * the receiver does not hold the whole receipt set.
 */
export async function postSpans(url: URL, spans: OtlpSpan[]): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(otlpRequest(spans)),
      signal: AbortSignal.timeout(exportLimits.otlpRequestTimeoutMs),
    });
  } catch (error) {
    throw new OtlpSendError(`cannot reach ${url.origin}${url.pathname}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const body = await response.text();
  if (!response.ok) throw new OtlpSendError(`${url.origin}${url.pathname} answered ${response.status}: ${body.slice(0, 200)}`);
  const partial = partialSuccessOf(body);
  if (partial !== null && partial.rejected > 0) {
    throw new OtlpSendError(`${url.origin}${url.pathname} rejected ${partial.rejected} of ${spans.length} spans: ${partial.message}`);
  }
}

function partialSuccessOf(body: string): { rejected: number; message: string } | null {
  if (body.trim() === '') return null;
  try {
    const value: unknown = JSON.parse(body);
    if (!isJsonObject(value) || !isJsonObject(value.partialSuccess)) return null;
    const rejected = Number(value.partialSuccess.rejectedSpans ?? 0);
    return { rejected: Number.isFinite(rejected) ? rejected : 1, message: str(value.partialSuccess.errorMessage) ?? '' };
  } catch {
    return null;
  }
}
