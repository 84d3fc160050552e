import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import { groupsOf, SESSION_COOKIE } from './approver-routes.ts';
import { LIVE_PATH } from './openapi.ts';
import type { SessionStore } from './sessions.ts';

/**
 * The approvers' live feed: a websocket that first sends the person's current inbox, then every
 * change to items of their groups. The session cookie authenticates the upgrade; SameSite=Strict
 * keeps other sites from opening it with the person's cookie.
 */
export async function liveRoute(app: FastifyInstance, opts: { services: Services; sessions: SessionStore }): Promise<void> {
  const { services, sessions } = opts;
  // Before the upgrade, so a page is told 503 journal_unavailable as a plain answer.
  const viewsAvailable = async () => {
    services.views.assertAvailable();
  };
  // Described in the OpenAPI document by openapi.ts: the generator leaves websocket routes out.
  app.get(LIVE_PATH, { websocket: true, preValidation: viewsAvailable }, async (socket, request) => {
    const session = sessions.touch(request.cookies[SESSION_COOKIE]);
    const person = session && session !== 'expired' ? services.config.people.find((p) => p.name === session.name) : undefined;
    if (person?.role !== 'approver') {
      socket.close(4401, session === 'expired' ? 'session_expired' : 'unauthorized');
      return;
    }
    let leave: () => void;
    try {
      leave = await services.views.join(socket, groupsOf(services, person.name));
    } catch (error) {
      // The views could not catch up (a journal that failed a check is reported by the views).
      if (!services.views.report(error)) request.log.error({ err: error }, 'live feed could not start');
      socket.close(1011, 'journal_unavailable');
      return;
    }
    socket.on('close', leave);
    socket.on('error', leave);
  });
}
