import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { ErrorCode } from '../../shared/api.ts';
import { limits } from '../../shared/limits.ts';
import {
  ReconciliationRunDetailSchema,
  ReconciliationRunParams,
  ReconciliationRunSchema,
  ReconciliationStartSchema,
  responses,
} from '../../shared/schemas.ts';
import { ReconciliationRuns } from '../reconcile/runs.ts';
import type { Services } from '../app/services.ts';
import { personOf } from './access-guard.ts';
import { AppError } from './errors.ts';

/** The seconds a refused start is told to wait: a run of a few hundred payments lists them in about that long. */
const RUN_BUSY_RETRY_S = 10;

/**
 * Reconciliation with Stripe, for finance (registered inside the session scope and the journal's,
 * so nothing of a run is shown, and none starts, while the journal stands failed; the access rules
 * refuse an approver: a run compares every group's refunds with Stripe, and an approver reads
 * their own groups only). A POST starts a run in the background and answers at once; GETs read its
 * progress and result. The runs live in this plugin, apart from the journal and its views.
 */
export async function reconciliationRoutes(scope: FastifyInstance, opts: { services: Services }): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services } = opts;
  const runs = new ReconciliationRuns({
    journal: services.journal,
    stripe: services.target.stripe,
    wallMs: () => services.clock.wallMs(),
    onError: (runId, error) => app.log.error({ err: error, runId }, 'a reconciliation run failed'),
  });
  const finance = { tags: ['finance'], security: [{ session: [] }] };
  const sessionErrors: ErrorCode[] = ['unauthorized', 'session_expired', 'forbidden', 'internal_error', 'journal_unavailable'];

  const startSchema = {
    ...finance,
    operationId: 'createReconciliation',
    summary: "compare the journal with Stripe's refunds for a period, in the background: the run (a second start while one runs for the period answers that one; 429 while as many runs as may run at once are running)",
    body: ReconciliationStartSchema,
    response: responses({ 202: ReconciliationRunDetailSchema }, [
      ...sessionErrors,
      'csrf_failed',
      'validation_failed',
      'payload_too_large',
      'unsupported_media_type',
      'rate_limited',
    ]),
  };
  app.post('/api/reconciliation', { schema: startSchema, config: { access: { resource: 'reconciliation', verb: 'start' } } }, async (request, reply) => {
    const { from_ms: fromMs, to_ms: toMs } = request.body;
    if (toMs <= fromMs) throw new AppError('validation_failed', 'to_ms: must be after from_ms');
    if (toMs - fromMs > limits.reconcilePeriodMsMax) {
      throw new AppError('validation_failed', `to_ms: the period may be at most ${limits.reconcilePeriodMsMax / 86_400_000} days`);
    }
    // Each run lists every payment Interlock has seen and holds the journal's refunds: a flood of
    // periods from one session must not start a flood of runs.
    if (!runs.mayStart({ fromMs, toMs })) {
      reply.header('retry-after', String(RUN_BUSY_RETRY_S));
      throw new AppError('rate_limited', `${limits.reconcileRunsRunningMax} reconciliation runs are running; start this period once one has finished`);
    }
    const { run } = runs.start({ fromMs, toMs }, personOf(request).name);
    return reply.code(202).send(run);
  });

  const listSchema = {
    ...finance,
    operationId: 'listReconciliations',
    summary: 'the reconciliation runs kept (the last few, in memory), newest first, without their rows',
    response: responses({ 200: Type.Object({ runs: Type.Array(ReconciliationRunSchema) }) }, sessionErrors),
  };
  app.get('/api/reconciliation', { schema: listSchema, config: { access: { resource: 'reconciliation', verb: 'read' } } }, async () => ({ runs: runs.list() }));

  const runSchema = {
    ...finance,
    operationId: 'getReconciliation',
    summary: "one run: its progress (payment intents done of total) and, once done, each category's refunds",
    params: ReconciliationRunParams,
    response: responses({ 200: ReconciliationRunDetailSchema }, [...sessionErrors, 'validation_failed', 'not_found']),
  };
  app.get('/api/reconciliation/:run_id', { schema: runSchema, config: { access: { resource: 'reconciliation', verb: 'read' } } }, async (request) => {
    const run = runs.get(request.params.run_id);
    if (run === undefined) throw new AppError('not_found', `no reconciliation run ${request.params.run_id} (runs are kept in memory until a restart)`);
    return run;
  });
}
