import Database from 'better-sqlite3';
import { assertNever } from '../../shared/statuses.ts';
import { sandboxLimits } from './limits.ts';
import { isRecord } from './params.ts';
import {
  CARD_BRANDS,
  type ChargeRecord,
  type CustomerRecord,
  DISPUTE_STATUSES,
  type DisputeRecord,
  PAYMENT_INTENT_STATUSES,
  PAYMENT_METHODS,
  type PaymentIntentRecord,
  type PaymentMethodRecord,
  REFUND_ORIGINS,
  REFUND_REASONS,
  REFUND_STATUSES,
  type RefundRecord,
  type SandboxRecord,
} from './types.ts';

/** The answer saved for an idempotency key, replayed to later requests with the same key. */
export interface SavedAnswer {
  key: string;
  /** `POST /v1/refunds`: a key belongs to one endpoint. */
  endpoint: string;
  /** The canonical parameters of the first request. */
  fingerprint: string;
  statusCode: number;
  /** The JSON text answered, replayed byte for byte. */
  body: string;
  /** The Request-Id of the first request, sent back as Original-Request on replays. */
  requestId: string;
  createdMs: number;
}

interface SavedAnswerRow {
  key: string;
  endpoint: string;
  fingerprint: string;
  status_code: number;
  body: string;
  request_id: string;
  created_ms: number;
}

type Check = (value: unknown) => boolean;

const string: Check = (v) => typeof v === 'string';
const number: Check = (v) => typeof v === 'number' && Number.isFinite(v);
const boolean: Check = (v) => typeof v === 'boolean';
const nullable = (check: Check): Check => (v) => v === null || check(v);
/** A field added after files were first written: absent in an older file, and read as null. */
const added = (check: Check): Check => (v) => v === undefined || v === null || check(v);
const oneOf = (values: readonly string[]): Check => (v) => typeof v === 'string' && values.includes(v);
const is = (literal: string): Check => (v) => v === literal;
const metadata: Check = (v) => isRecord(v) && !Array.isArray(v) && Object.values(v).every((item) => typeof item === 'string');

/** Every field of every kind of record, with what it must hold: the type checker keeps the lists whole. */
const RECORD_SHAPES: { [K in SandboxRecord['kind']]: Record<keyof Extract<SandboxRecord, { kind: K }>, Check> } = {
  payment_intent: {
    kind: is('payment_intent'),
    id: string,
    amountCents: number,
    currency: string,
    paymentMethod: nullable(oneOf(PAYMENT_METHODS)),
    paymentMethodId: added(string),
    customerId: added(string),
    status: oneOf(PAYMENT_INTENT_STATUSES),
    latestChargeId: nullable(string),
    clientSecret: string,
    description: nullable(string),
    metadata,
    createdMs: number,
  },
  charge: {
    kind: is('charge'),
    id: string,
    paymentIntentId: string,
    amountCents: number,
    currency: string,
    paymentMethod: oneOf(PAYMENT_METHODS),
    paymentMethodId: added(string),
    customerId: added(string),
    createdMs: number,
  },
  refund: {
    kind: is('refund'),
    id: string,
    amountCents: number,
    currency: string,
    chargeId: string,
    paymentIntentId: string,
    status: oneOf(REFUND_STATUSES),
    reason: nullable(oneOf(REFUND_REASONS)),
    failureReason: nullable(string),
    metadata,
    origin: oneOf(REFUND_ORIGINS),
    createdMs: number,
  },
  dispute: {
    kind: is('dispute'),
    id: string,
    chargeId: string,
    paymentIntentId: string,
    amountCents: number,
    currency: string,
    reason: string,
    status: added(oneOf(DISPUTE_STATUSES)),
    evidenceSubmitted: added(boolean),
    createdMs: number,
  },
  customer: {
    kind: is('customer'),
    id: string,
    name: nullable(string),
    email: nullable(string),
    createdMs: number,
  },
  payment_method: {
    kind: is('payment_method'),
    id: string,
    brand: oneOf(CARD_BRANDS),
    last4: string,
    expMonth: number,
    expYear: number,
    customerId: nullable(string),
    createdMs: number,
  },
};

const SHAPES_BY_KIND: ReadonlyMap<string, Record<string, Check>> = new Map(Object.entries(RECORD_SHAPES));

/** True for an object the sandbox wrote: a known kind with every field of that kind well formed. */
function isSandboxRecord(value: unknown): value is SandboxRecord {
  if (!isRecord(value)) return false;
  const shape = typeof value.kind === 'string' ? SHAPES_BY_KIND.get(value.kind) : undefined;
  return shape !== undefined && Object.entries(shape).every(([field, check]) => check(value[field]));
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS objects (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key TEXT PRIMARY KEY,
  endpoint TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status_code INTEGER NOT NULL,
  body TEXT NOT NULL,
  request_id TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_ms);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/**
 * The sandbox's state: every object by id plus the saved idempotency answers, in SQLite (a file
 * when durable, memory otherwise), with the objects also held in maps for reads. A write is one
 * transaction committed with `synchronous = FULL` before the caller answers, and the maps change
 * only after it commits.
 */
export class SandboxStore {
  readonly paymentIntents = new Map<string, PaymentIntentRecord>();
  readonly charges = new Map<string, ChargeRecord>();
  /** In creation order (a Map keeps the first insertion's place when a refund is updated). */
  readonly refunds = new Map<string, RefundRecord>();
  readonly disputes = new Map<string, DisputeRecord>();
  readonly customers = new Map<string, CustomerRecord>();
  readonly paymentMethods = new Map<string, PaymentMethodRecord>();
  /** Refund ids by charge and by payment intent, in creation order: a payment's reads never scan every refund. */
  private readonly refundIdsByOwner = new Map<string, string[]>();
  private readonly db: Database.Database;
  private readonly upsert: Database.Statement;
  private readonly saveAnswer: Database.Statement;
  private keyCount: number;

  constructor(file?: string) {
    this.db = new Database(file ?? ':memory:');
    if (file !== undefined) this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
    const rows = this.db.prepare<[], { seq: number; json: string }>('SELECT seq, json FROM objects ORDER BY seq').all();
    for (const row of rows) {
      const record: unknown = JSON.parse(row.json);
      // Only `commit` writes this table, so an object in another shape is a damaged file: stop here.
      if (!isSandboxRecord(record)) throw new Error(`sandbox store: object ${row.seq} is not a record the sandbox writes`);
      this.remember(record);
    }
    this.keyCount = this.db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM idempotency_keys').get()?.n ?? 0;
    this.upsert = this.db.prepare(
      'INSERT INTO objects (id, kind, json) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET json = excluded.json',
    );
    this.saveAnswer = this.db.prepare(
      'INSERT INTO idempotency_keys (key, endpoint, fingerprint, status_code, body, request_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
  }

  refundsOfCharge(chargeId: string): RefundRecord[] {
    return this.refundsOf(`charge:${chargeId}`);
  }

  refundsOfPaymentIntent(paymentIntentId: string): RefundRecord[] {
    return this.refundsOf(`payment_intent:${paymentIntentId}`);
  }

  /** Write objects and, when given, the answer saved for a key, in one durable transaction. */
  commit(records: readonly SandboxRecord[], answer?: SavedAnswer): void {
    const { upsert, saveAnswer: save } = this;
    this.db.transaction(() => {
      for (const record of records) upsert.run(record.id, record.kind, JSON.stringify(record));
      if (answer !== undefined) {
        save.run(
          answer.key,
          answer.endpoint,
          answer.fingerprint,
          answer.statusCode,
          answer.body,
          answer.requestId,
          answer.createdMs,
        );
      }
    })();
    for (const record of records) this.remember(record);
    if (answer !== undefined) this.keyCount += 1;
  }

  /** The answer saved for a key, or null when there is none or it is 24 h old (then it is forgotten). */
  savedAnswer(key: string, nowMs: number): SavedAnswer | null {
    const row = this.db.prepare<[string], SavedAnswerRow>('SELECT * FROM idempotency_keys WHERE key = ?').get(key);
    if (row === undefined) return null;
    if (nowMs - row.created_ms >= sandboxLimits.idempotencyKeyTtlMs) {
      this.keyCount -= this.db.prepare('DELETE FROM idempotency_keys WHERE key = ?').run(key).changes;
      return null;
    }
    return {
      key: row.key,
      endpoint: row.endpoint,
      fingerprint: row.fingerprint,
      statusCode: row.status_code,
      body: row.body,
      requestId: row.request_id,
      createdMs: row.created_ms,
    };
  }

  /** Forget keys that are 24 h old; true when there is room for one more. */
  makeRoomForKey(nowMs: number): boolean {
    if (this.keyCount < sandboxLimits.idempotencyKeysMax) return true;
    const cutoffMs = nowMs - sandboxLimits.idempotencyKeyTtlMs;
    this.keyCount -= this.db.prepare('DELETE FROM idempotency_keys WHERE created_ms <= ?').run(cutoffMs).changes;
    return this.keyCount < sandboxLimits.idempotencyKeysMax;
  }

  /** How far the sandbox clock has been advanced past the base clock; survives a restart. */
  clockOffsetMs(): number {
    const row = this.db.prepare<[], { value: string }>("SELECT value FROM meta WHERE name = 'clock_offset_ms'").get();
    return row === undefined ? 0 : Number(row.value);
  }

  setClockOffsetMs(offsetMs: number): void {
    this.db
      .prepare(
        "INSERT INTO meta (name, value) VALUES ('clock_offset_ms', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      )
      .run(String(offsetMs));
  }

  close(): void {
    this.db.close();
  }

  private refundsOf(owner: string): RefundRecord[] {
    return (this.refundIdsByOwner.get(owner) ?? []).map((id) => this.refunds.get(id)!);
  }

  private indexRefund(owner: string, refundId: string): void {
    const ids = this.refundIdsByOwner.get(owner);
    if (ids === undefined) this.refundIdsByOwner.set(owner, [refundId]);
    else ids.push(refundId);
  }

  private remember(record: SandboxRecord): void {
    switch (record.kind) {
      case 'payment_intent':
        this.paymentIntents.set(record.id, record);
        return;
      case 'charge':
        this.charges.set(record.id, record);
        return;
      case 'refund':
        if (!this.refunds.has(record.id)) {
          this.indexRefund(`charge:${record.chargeId}`, record.id);
          this.indexRefund(`payment_intent:${record.paymentIntentId}`, record.id);
        }
        this.refunds.set(record.id, record);
        return;
      case 'dispute':
        this.disputes.set(record.id, record);
        return;
      case 'customer':
        this.customers.set(record.id, record);
        return;
      case 'payment_method':
        this.paymentMethods.set(record.id, record);
        return;
      default:
        assertNever(record);
    }
  }
}
