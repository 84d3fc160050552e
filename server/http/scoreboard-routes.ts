import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ErrorCode } from '../../shared/api.ts';
import { csvAnswer, responses, ScoreboardQuery, ScoreboardSchema } from '../../shared/schemas.ts';
import { boundOf, mayAskForGroup, type ReadBound } from '../access/rules.ts';
import { askOf, personOf } from './access-guard.ts';
import type { Scoreboard } from '../scoreboard/figures.ts';
import type { BoardFilter } from '../scoreboard/projection.ts';
import type { ScoreboardView } from '../scoreboard/view.ts';
import { scoreboardCsv } from '../scoreboard/series.ts';
import { readSeries } from '../scoreboard/series-read.ts';
import type { Services } from '../app/services.ts';
import { AppError } from './errors.ts';

type Query = { from_ms?: string; to_ms?: string; group?: string };

const DAY_MS = 86_400_000;

/**
 * The filter asked for, within what the reader may read: an approver's figures are those of the
 * requests ever routed to one of their groups (the ledger's bound), and a group of someone else's
 * is refused rather than answered empty, so nobody takes its zeros for the group's figures.
 */
function parseFilter(services: Services, query: Query, bound: ReadBound): BoardFilter {
  const filter: BoardFilter = { ...bound };
  for (const [key, field] of [['from_ms', 'fromMs'], ['to_ms', 'toMs']] as const) {
    const raw = query[key];
    if (raw === undefined || raw === '') continue;
    // The schema let through digits only, at most 16 of them.
    filter[field] = Number(raw);
  }
  if (query.group !== undefined && query.group !== '') {
    if (!Object.hasOwn(services.config.groups, query.group)) throw new AppError('validation_failed', 'group: not a group in the config');
    if (!mayAskForGroup(bound, query.group)) {
      throw new AppError('forbidden', `group: not one of your groups (${(bound.within ?? []).join(', ')}); an approver's scoreboard covers their own groups`);
    }
    filter.group = query.group;
  }
  return filter;
}

/**
 * What finance reads: the scoreboard (whole, or a time range or a group), the series behind its
 * charts, and a CSV of the same figures; an approver reads the same of their own groups. Every
 * figure comes from the journal alone.
 */
export async function scoreboardRoutes(scope: FastifyInstance, opts: { services: Services }): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services } = opts;
  const errors: ErrorCode[] = ['validation_failed', 'unauthorized', 'session_expired', 'forbidden', 'internal_error', 'journal_unavailable'];
  const finance = { tags: ['finance'], security: [{ session: [] }], querystring: ScoreboardQuery };
  const breakdown = { resource: 'scoreboard_breakdown', verb: 'read' } as const;
  const board = async (scoreboard: ScoreboardView, filter: BoardFilter): Promise<Scoreboard> => {
    const whole = filter.fromMs === undefined && filter.toMs === undefined && filter.group === undefined && filter.within === undefined;
    return whole ? scoreboard.board() : scoreboard.slice(filter);
  };
  /**
   * The filter asked for within what the route's question lets the person read (the access rules),
   * checked first, and the scoreboard caught up with the journal.
   */
  const read = async (request: FastifyRequest<{ Querystring: Query }>) => {
    const filter = parseFilter(services, request.query, boundOf(personOf(request), services.config.groups, askOf(request)));
    const { scoreboard } = await services.views.current();
    return { filter, scoreboard };
  };

  const boardSchema = {
    ...finance,
    operationId: 'getScoreboard',
    summary: 'the scoreboard: whole, or over from_ms..to_ms, or for one group',
    response: responses({ 200: Type.Object({ board: ScoreboardSchema, now_ms: Type.Integer() }) }, errors),
  };
  app.get('/api/scoreboard', { schema: boardSchema, config: { access: breakdown } }, async (request) => {
    const { filter, scoreboard } = await read(request);
    return { board: await board(scoreboard, filter), now_ms: services.clock.nowMs() };
  });

  const csvSchema = {
    ...finance,
    operationId: 'getScoreboardCsv',
    summary: 'the same figures as CSV',
    response: responses({ 200: csvAnswer('one figure a line: name, value; lines only ever added after the others') }, errors),
  };
  app.get('/api/scoreboard.csv', { schema: csvSchema, config: { access: { resource: 'export', verb: 'download' } } }, async (request, reply) => {
    const { filter, scoreboard } = await read(request);
    reply.header('content-type', 'text/csv; charset=utf-8');
    reply.header('content-disposition', 'attachment; filename="interlock-scoreboard.csv"');
    return scoreboardCsv(await board(scoreboard, filter));
  });

  const seriesSchema = {
    ...finance,
    operationId: 'getScoreboardSeries',
    summary: 'the series behind the charts: volume, money refunded by currency, waits, breaches by group, escalations by reason and by reason and group',
    response: responses({ 200: Type.Object({}, { additionalProperties: true }) }, errors),
  };
  app.get('/api/scoreboard/series', { schema: seriesSchema, config: { access: breakdown } }, async (request) => {
    const { filter, scoreboard } = await read(request);
    const toMs = filter.toMs ?? services.clock.nowMs();
    const fromMs = filter.fromMs ?? toMs - DAY_MS;
    return readSeries(scoreboard, filter, fromMs, toMs);
  });
}
