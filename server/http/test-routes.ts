import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import { parseClockBody } from './validate.ts';

/**
 * Routes for tests and demos only, registered only when the config says `test_mode: true`: with
 * it off they do not exist. Registered inside the approvers' scope, so they need a session and
 * its CSRF token like every other call that changes something.
 */
export async function testRoutes(app: FastifyInstance, opts: { services: Services }): Promise<void> {
  const { services } = opts;

  /** Move the application clock forward, run the SLA tick at once, and tell every live page. */
  app.post('/api/test/clock', async (request) => {
    const { advance_ms: advanceMs } = parseClockBody(request.body);
    const nowMs = services.clock.advance(advanceMs);
    await services.inbox.tick();
    // Caught up first, so every page hears of the items the tick moved before it hears the time.
    await services.views.current();
    services.views.broadcast({ type: 'clock', now_ms: nowMs });
    return { now_ms: nowMs };
  });
}
