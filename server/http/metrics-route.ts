import type { FastifyInstance, FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';
import { Type } from 'typebox';
import { responses } from '../../shared/schemas.ts';
import { tokenMatches } from '../config/secrets.ts';
import type { MetricsConfig } from '../config/schema.ts';
import { WEBHOOK_PATH } from '../confirm/webhook-plugin.ts';
import { InterlockMetrics } from '../metrics/metrics.ts';
import type { Services } from '../app/services.ts';
import { AppError } from './errors.ts';
import type { OverloadState } from './overload.ts';

/** The answer is Prometheus' text exposition format, not JSON: the document says so. */
const PROMETHEUS_TEXT = Type.Unsafe<string>({
  description: "Prometheus' text exposition format 0.0.4",
  content: { 'text/plain': { schema: Type.String() } },
});

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{8,512})$/;

/** The named ranges, as proxy-addr (and so `trust_proxy`) defines them. */
const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.1/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** Whether an address is one of `allowFrom`: an address, a CIDR range, or a named range (loopback). */
export function isAllowedAddress(address: string | undefined, allowFrom: readonly string[]): boolean {
  if (address === undefined || !ipaddr.isValid(address)) return false;
  // An IPv4 client on a dual-stack socket reads ::ffff:127.0.0.1: judged as the IPv4 address it is.
  const parsed = ipaddr.process(address);
  const within = (cidr: string) => {
    const [range, bits] = ipaddr.parseCIDR(cidr);
    return range.kind() === parsed.kind() && parsed.match(range, bits);
  };
  return allowFrom.some((allowed) => {
    const named = NAMED_RANGES[allowed];
    if (named !== undefined) return named.some(within);
    return allowed.includes('/') ? within(allowed) : ipaddr.process(allowed).toString() === parsed.toString();
  });
}

/** A scraper may read the metrics from an allowed address, or anywhere with the metrics token. */
export function mayScrape(config: MetricsConfig, address: string | undefined, authorization: string | undefined): boolean {
  if (isAllowedAddress(address, config.allowFrom)) return true;
  const token = BEARER.exec(authorization ?? '')?.[1];
  return token !== undefined && config.tokenSha256 !== null && tokenMatches(token, config.tokenSha256);
}

/**
 * The address a scrape is judged by: the client's as `trust_proxy` reads it. A request forwarded
 * by a proxy the config does not trust came from that proxy's address, not the scraper's (behind
 * a proxy on the same machine, everyone's is 127.0.0.1): no address of it is believed, and only
 * the token lets it in.
 */
function scraperAddress(request: FastifyRequest, services: Services): string | undefined {
  const forwarded = request.headers['x-forwarded-for'] !== undefined || request.headers.forwarded !== undefined;
  return forwarded && services.config.network.trustProxy === false ? undefined : request.ip;
}

/** The route a request was answered by, as its pattern (`/v1/refunds/:request_id`), never its raw URL. */
function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? '(unmatched)';
}

/**
 * `GET /metrics` in Prometheus' text format, and the one hook that times every answer. Installed
 * on the root instance (a hook in a plugin would time only that plugin's routes). The client's
 * address is read as `trust_proxy` says; the Host check applies as on every route.
 */
export function installMetrics(app: FastifyInstance, services: Services, overload?: OverloadState): InterlockMetrics {
  const metrics = new InterlockMetrics({
    views: services.views,
    journal: services.journal,
    budget: services.budget,
    refundOutcomes: services.refundOutcomes,
    wholePass: services.wholePass,
    groups: () => Object.keys(services.config.groups),
    ...(overload === undefined ? {} : { overload }),
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = routeOf(request);
    metrics.observeRequest(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
    if (route === WEBHOOK_PATH) metrics.observeWebhook(reply.statusCode);
  });
  app.get(
    '/metrics',
    {
      // No person's route: a scraper is let in by metrics.allow_from or the metrics token, checked below.
      config: { access: { public: 'operators: metrics.allow_from or the metrics token' } },
      schema: {
        tags: ['operators'],
        security: [{ metricsToken: [] }],
        operationId: 'getMetrics',
        summary: "Prometheus metrics: queues, Stripe budget, journal, outbox, latency by route, the process's own",
        description: 'From an address metrics.allow_from names (loopback by default), or with Authorization: Bearer <metrics token>.',
        response: responses({ 200: PROMETHEUS_TEXT }, ['unauthorized', 'internal_error']),
      },
    },
    async (request, reply) => {
      if (!mayScrape(services.config.metrics, scraperAddress(request, services), request.headers.authorization)) {
        throw new AppError('unauthorized', 'scrape from an address metrics.allow_from names, or send Authorization: Bearer <metrics token>');
      }
      const { contentType, text } = await metrics.scrape();
      return reply.type(contentType).send(text);
    },
  );
  return metrics;
}
