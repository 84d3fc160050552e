import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../../shared/api.ts';
import { isLedgerOutcome, type LedgerPage, type LedgerTotals } from '../../shared/ledger.ts';
import { limits } from '../../shared/limits.ts';
import { csvAnswer, EffectParams, LedgerFilterQuery, LedgerPageSchema, LedgerQuery, LedgerTotalsSchema, ReceiptSchema, responses } from '../../shared/schemas.ts';
import { isStatus } from '../../shared/statuses.ts';
import { ledgerCsvDownloads } from '../ledger/csv-downloads.ts';
import { decodeCursor, encodeCursor, type LedgerFilter, rowMatches } from '../ledger/filter.ts';
import { signReceipt } from '../receipts/receipts.ts';
import { displayNameOf, type Services } from '../app/services.ts';
import { boundOf } from '../access/rules.ts';
import { askOf, personOf } from './access-guard.ts';
import { AppError } from './errors.ts';

type Query = {
  from_ms?: string;
  to_ms?: string;
  agent?: string;
  group?: string;
  status?: string;
  currency?: string;
  outcome?: string;
  cursor?: string;
  limit?: string;
};

/** When a download refused because others are being made may be asked again, in seconds. */
const CSV_BUSY_RETRY_S = 5;

/** The filter asked for; the schema let through digits only for times, and the pattern of each name. */
function parseFilter(services: Services, query: Query): LedgerFilter {
  const filter: LedgerFilter = {};
  if (query.from_ms !== undefined && query.from_ms !== '') filter.fromMs = Number(query.from_ms);
  if (query.to_ms !== undefined && query.to_ms !== '') filter.toMs = Number(query.to_ms);
  if (query.agent !== undefined && query.agent !== '') filter.agent = query.agent;
  if (query.group !== undefined && query.group !== '') {
    if (!Object.hasOwn(services.config.groups, query.group)) throw new AppError('validation_failed', 'group: not a group in the config');
    filter.group = query.group;
  }
  if (query.status !== undefined && query.status !== '') {
    if (!isStatus(query.status)) throw new AppError('validation_failed', 'status: not a status agents are told (COMMITTED, QUEUED, CLOSED, REFUSED:stale_premise, …)');
    filter.status = query.status;
  }
  if (query.currency !== undefined && query.currency !== '') filter.currency = query.currency;
  // The schema let through only the closed list's words (or nothing).
  if (query.outcome !== undefined && query.outcome !== '' && isLedgerOutcome(query.outcome)) filter.outcome = query.outcome;
  return filter;
}

function parsePage(query: Query): { beforeSeq?: number; limit: number } {
  const limit = query.limit === undefined ? limits.ledgerPageRowsDefault : Number(query.limit);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > limits.ledgerPageRowsMax) {
    throw new AppError('validation_failed', `limit: rows per page, 1 to ${limits.ledgerPageRowsMax}`);
  }
  if (query.cursor === undefined) return { limit };
  const beforeSeq = decodeCursor(query.cursor);
  if (beforeSeq === null) throw new AppError('validation_failed', 'cursor: not a cursor this ledger gave out; ask for the first page again without one');
  return { beforeSeq, limit };
}

/**
 * Finance's refund ledger: one row per request, newest first, filtered by period, agent, group,
 * status, currency and outcome, with totals per currency over the whole filter. The JSON pages come from the views (the ledger's derived table,
 * kept incrementally); the CSV streams the same rows from the store, so a whole period of any size is exported
 * without holding it.
 */
export async function ledgerRoutes(scope: FastifyInstance, opts: { services: Services }): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services } = opts;
  const errors: ErrorCode[] = ['validation_failed', 'unauthorized', 'session_expired', 'forbidden', 'internal_error', 'journal_unavailable'];
  const finance = { tags: ['finance'], security: [{ session: [] }], querystring: LedgerQuery };
  const displayName = (login: string) => displayNameOf(services.config, login);
  /** The rows the route's question lets this person read, from the access rules (finance every row, an approver their groups'). */
  const bound = (request: FastifyRequest) => boundOf(personOf(request), services.config.groups, askOf(request));
  /** The filter asked for, narrowed to what this person may read. */
  const readableFilter = (request: FastifyRequest<{ Querystring: Query }>): LedgerFilter => ({
    ...parseFilter(services, request.query),
    ...bound(request),
  });
  const downloads = ledgerCsvDownloads(services);

  const pageSchema = {
    ...finance,
    operationId: 'listLedger',
    summary: 'the refund ledger: one row per request, newest first, a page at a time (cursor from next_cursor)',
    response: responses({ 200: LedgerPageSchema }, errors),
  };
  app.get('/api/ledger', { schema: pageSchema, config: { access: { resource: 'ledger_row', verb: 'list' } } }, async (request): Promise<LedgerPage> => {
    const filter = readableFilter(request);
    const page = parsePage(request.query);
    const { ledger } = await services.views.current();
    const found = await ledger.page(filter, page, displayName);
    return { rows: found.rows, next_cursor: found.nextBeforeSeq === null ? null : encodeCursor(found.nextBeforeSeq), now_ms: services.clock.nowMs() };
  });

  const totalsSchema = {
    ...finance,
    // The filter only: the totals cover every row of it, whatever page is shown.
    querystring: LedgerFilterQuery,
    operationId: 'getLedgerTotals',
    summary: "totals per currency over every row of the ledger's filter: asked, sent, failed at Stripe, and per outcome",
    response: responses({ 200: LedgerTotalsSchema }, errors),
  };
  app.get('/api/ledger/totals', { schema: totalsSchema, config: { access: { resource: 'ledger_row', verb: 'list' } } }, async (request): Promise<LedgerTotals> => {
    const filter = readableFilter(request);
    const { ledger } = await services.views.current();
    return { ...(await ledger.totals(filter, displayName)), now_ms: services.clock.nowMs() };
  });

  const csvSchema = {
    ...finance,
    // The filter only: the CSV holds every row of it, so it takes no cursor and no page size.
    querystring: LedgerFilterQuery,
    operationId: 'getLedgerCsv',
    summary: 'the same rows in CSV (RFC 4180, formula-safe), every page of them, streamed',
    response: responses({ 200: csvAnswer('the ledger rows of the filter, newest first') }, [...errors, 'rate_limited']),
  };
  app.get('/api/ledger.csv', { schema: csvSchema, config: { access: { resource: 'export', verb: 'download' } } }, async (request, reply) => {
    const filter = readableFilter(request);
    const stream = await downloads.open(filter, (error) => request.log.error({ err: error }, 'the ledger export failed part way; the download was cut short'));
    if (stream === 'busy') {
      reply.header('retry-after', String(CSV_BUSY_RETRY_S));
      throw new AppError('rate_limited', `${limits.ledgerCsvExportsMax} ledger downloads are being made; ask again once one has finished`);
    }
    reply.header('content-type', 'text/csv; charset=utf-8');
    reply.header('content-disposition', 'attachment; filename="interlock-ledger.csv"');
    return reply.send(stream);
  });

  const receiptSchema = {
    tags: ['finance'],
    security: [{ session: [] }],
    params: EffectParams,
    operationId: 'getLedgerReceipt',
    summary: "the signed receipt of a ledger row's request (its receipt_url), to verify offline",
    response: responses({ 200: ReceiptSchema }, ['unauthorized', 'session_expired', 'forbidden', 'not_found', 'validation_failed', 'internal_error', 'journal_unavailable']),
  };
  // Finance ties each row to its receipt: any request in the ledger, whichever group had it, or none;
  // an approver, the requests of their own groups.
  app.get('/api/ledger/:effect_id/receipt', { schema: receiptSchema, config: { access: { resource: 'receipt', verb: 'read' } } }, async (request, reply) => {
    const effectId = request.params.effect_id;
    const views = await services.views.current();
    const row = await views.ledger.rowOf(effectId, displayName);
    if (row === null || !rowMatches(row, bound(request))) throw new AppError('not_found', 'no such request in the ledger');
    const chain = await views.chain(effectId);
    reply.header('content-disposition', `attachment; filename="interlock-receipt-${effectId}.json"`);
    return signReceipt(effectId, chain, services.signingKey);
  });
}
