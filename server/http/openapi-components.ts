import type { TSchema } from 'typebox';
import {
  CheckpointAnswerSchema,
  ClockBodySchema,
  ConflictingPayloadSchema,
  DecisionBodySchema,
  HistoryItemSchema,
  InboxItemSchema,
  ItemDetailSchema,
  LedgerCurrencyTotalsSchema,
  LedgerPageSchema,
  LedgerRowSchema,
  LedgerTotalsSchema,
  LoginBodySchema,
  MoneyFiguresSchema,
  NotReadySchema,
  PublicKeySetSchema,
  ReceiptSchema,
  ReconciliationResultSchema,
  ReconciliationRowSchema,
  ReconciliationRunDetailSchema,
  ReconciliationRunSchema,
  ReconciliationStartSchema,
  RefundAnswerSchema,
  RefundRequestBodySchema,
  ScoreboardSchema,
  SessionInfoSchema,
  VerifyReportSchema,
} from '../../shared/schemas.ts';

/**
 * The shapes the published document names once, under `components.schemas`, and refers to with
 * `$ref` wherever a route uses them: PascalCase nouns a code generator turns into type names. The
 * server validates and answers with the schemas themselves; only the document sees these names.
 */
export const COMPONENT_SCHEMAS: Readonly<Record<string, TSchema>> = {
  RefundRequest: RefundRequestBodySchema,
  RefundAnswer: RefundAnswerSchema,
  ConflictingPayload: ConflictingPayloadSchema,
  Receipt: ReceiptSchema,
  VerifyReport: VerifyReportSchema,
  PublicKeySet: PublicKeySetSchema,
  Checkpoint: CheckpointAnswerSchema,
  NotReady: NotReadySchema,
  LoginRequest: LoginBodySchema,
  SessionInfo: SessionInfoSchema,
  DecisionRequest: DecisionBodySchema,
  InboxItem: InboxItemSchema,
  HistoryItem: HistoryItemSchema,
  ItemDetail: ItemDetailSchema,
  Scoreboard: ScoreboardSchema,
  MoneyFigures: MoneyFiguresSchema,
  LedgerRow: LedgerRowSchema,
  LedgerPage: LedgerPageSchema,
  LedgerTotals: LedgerTotalsSchema,
  LedgerCurrencyTotals: LedgerCurrencyTotalsSchema,
  ReconciliationRequest: ReconciliationStartSchema,
  ReconciliationRun: ReconciliationRunSchema,
  ReconciliationRunDetail: ReconciliationRunDetailSchema,
  ReconciliationResult: ReconciliationResultSchema,
  ReconciliationRow: ReconciliationRowSchema,
  ClockRequest: ClockBodySchema,
};

const NAMES = new Map<unknown, string>(Object.entries(COMPONENT_SCHEMAS).map(([name, schema]) => [schema, name]));
const NAMED = new Set(NAMES.values());

/**
 * A copy of a route's schema for the document, in which every named shape carries its name as its
 * `title`. The route's own schema is left as it is, so what the server validates and how it writes
 * answers do not change.
 */
export function withComponentTitles<T>(schema: T): T {
  // Schemas are JSON: the copy is written and read back, each named shape met on the way titled.
  if (schema === undefined) return schema;
  return JSON.parse(JSON.stringify(schema, (_key, value: unknown) => titled(value)));
}

function titled(value: unknown): unknown {
  const name = NAMES.get(value);
  return name === undefined || !isRecord(value) ? value : { title: name, ...value };
}

type Document = { paths?: Record<string, unknown>; components?: object };

/**
 * The document with each named shape (a schema titled with its name) listed once under
 * `components.schemas` and referred to by `$ref` everywhere else, itself included.
 */
export function withComponentRefs<T extends Document>(document: T): T {
  const schemas: Record<string, unknown> = {};
  const refer = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(refer);
    if (!isRecord(value)) return value;
    const referred = Object.fromEntries(Object.entries(value).map(([key, member]) => [key, refer(member)]));
    const name = value.title;
    if (typeof name !== 'string' || !NAMED.has(name)) return referred;
    schemas[name] ??= referred;
    return { $ref: `#/components/schemas/${name}` };
  };
  const paths = Object.fromEntries(Object.entries(document.paths ?? {}).map(([path, item]) => [path, refer(item)]));
  const components = isRecord(document.components) ? document.components : {};
  const existing = isRecord(components.schemas) ? components.schemas : {};
  const sorted = Object.fromEntries(Object.entries({ ...existing, ...schemas }).sort(([a], [b]) => a.localeCompare(b)));
  return { ...document, paths, components: { ...components, schemas: sorted } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
