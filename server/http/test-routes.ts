import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ClockBodySchema, responses } from '../../shared/schemas.ts';
import type { Services } from '../app/services.ts';

/**
 * Routes for tests and demos only, registered only when the config says `test_mode: true`: with
 * it off they do not exist. Registered inside the approvers' scope, so they need a session and
 * its CSRF token like every other call that changes something.
 */
export async function testRoutes(scope: FastifyInstance, opts: { services: Services }): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services } = opts;
  const clockSchema = {
    tags: ['approvers'],
    security: [{ session: [] }],
    operationId: 'advanceTestClock',
    summary: 'test mode only: move the application clock forward and run the SLA tick',
    body: ClockBodySchema,
    response: responses({ 200: Type.Object({ now_ms: Type.Integer() }) }, [
      'validation_failed',
      'unauthorized',
      'session_expired',
      'csrf_failed',
      'payload_too_large',
      'unsupported_media_type',
      'internal_error',
      'journal_unavailable',
    ]),
  };

  /** Move the application clock forward, run the SLA tick at once, and tell every live page. */
  app.post('/api/test/clock', { schema: clockSchema, config: { access: { signedIn: 'test mode only: any signed-in person moves the clock' } } }, async (request) => {
    const { advance_ms: advanceMs } = request.body;
    const nowMs = services.clock.advance(advanceMs);
    await services.inbox.tick();
    await services.outbox.tick();
    // Caught up first, so every page hears of the items the tick moved before it hears the time.
    await services.views.current();
    services.views.broadcast({ type: 'clock', now_ms: nowMs });
    return { now_ms: nowMs };
  });
}
