import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Scoreboard } from '../scoreboard/figures.ts';
import type { BoardFilter, ScoreboardProjection } from '../scoreboard/projection.ts';
import { scoreboardCsv, volumeSeries, waitHistogram } from '../scoreboard/series.ts';
import type { Services } from '../services.ts';
import { AppError } from './errors.ts';

type Query = { from_ms?: string; to_ms?: string; group?: string };

const DAY_MS = 86_400_000;

function parseFilter(services: Services, query: Query): BoardFilter {
  const filter: BoardFilter = {};
  for (const [key, field] of [['from_ms', 'fromMs'], ['to_ms', 'toMs']] as const) {
    const raw = query[key];
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < 0) throw new AppError('validation_failed', `${key}: a time in ms since the epoch`);
    filter[field] = value;
  }
  if (query.group !== undefined && query.group !== '') {
    if (!Object.hasOwn(services.config.groups, query.group)) throw new AppError('validation_failed', 'group: not a group in the config');
    filter.group = query.group;
  }
  return filter;
}

/**
 * What finance reads: the scoreboard (whole, or a time range or a group), the series behind its
 * charts, and a CSV of the same figures. Every figure comes from the journal alone.
 */
export async function scoreboardRoutes(app: FastifyInstance, opts: { services: Services }): Promise<void> {
  const { services } = opts;
  const board = async (scoreboard: ScoreboardProjection, filter: BoardFilter): Promise<Scoreboard> => {
    const whole = filter.fromMs === undefined && filter.toMs === undefined && filter.group === undefined;
    return whole ? scoreboard.board() : scoreboard.slice(filter);
  };
  /** The filter asked for, checked first, and the scoreboard caught up with the journal. */
  const read = async (request: FastifyRequest<{ Querystring: Query }>) => {
    const filter = parseFilter(services, request.query);
    const { scoreboard } = await services.views.current();
    return { filter, scoreboard };
  };

  app.get<{ Querystring: Query }>('/api/scoreboard', async (request) => {
    const { filter, scoreboard } = await read(request);
    return { board: await board(scoreboard, filter), now_ms: services.clock.nowMs() };
  });

  app.get<{ Querystring: Query }>('/api/scoreboard.csv', async (request, reply) => {
    const { filter, scoreboard } = await read(request);
    reply.header('content-type', 'text/csv; charset=utf-8');
    reply.header('content-disposition', 'attachment; filename="interlock-scoreboard.csv"');
    return scoreboardCsv(await board(scoreboard, filter));
  });

  app.get<{ Querystring: Query }>('/api/scoreboard/series', async (request) => {
    const { filter, scoreboard } = await read(request);
    const toMs = filter.toMs ?? services.clock.nowMs();
    const fromMs = filter.fromMs ?? toMs - DAY_MS;
    const all = await scoreboard.chains();
    const chains = all.filter((f) => filter.group === undefined || f.groups.includes(filter.group));
    const current = await board(scoreboard, filter);
    return {
      volume: volumeSeries(chains, fromMs, toMs),
      waits: waitHistogram(chains.filter((f) => f.requestedAtMs === null || (f.requestedAtMs >= fromMs && f.requestedAtMs < toMs))),
      breaches_by_group: current.sla_breaches_by_group,
      escalated_by_reason: current.escalated_by_reason,
      groups: [...new Set(all.flatMap((f) => f.groups))].sort(),
      from_ms: fromMs,
      to_ms: toMs,
    };
  });
}
