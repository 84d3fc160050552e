import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import { groupsOf, SESSION_COOKIE } from './approver-routes.ts';
import type { SessionStore } from './sessions.ts';

/**
 * The approvers' live feed: a websocket that first sends the person's current inbox, then every
 * change to items of their groups. The session cookie authenticates the upgrade; SameSite=Strict
 * keeps other sites from opening it with the person's cookie.
 */
export async function liveRoute(app: FastifyInstance, opts: { services: Services; sessions: SessionStore }): Promise<void> {
  const { services, sessions } = opts;
  app.get('/api/live', { websocket: true }, async (socket, request) => {
    const session = sessions.touch(request.cookies[SESSION_COOKIE]);
    const person = session && session !== 'expired' ? services.config.people.find((p) => p.name === session.name) : undefined;
    if (person?.role !== 'approver') {
      socket.close(4401, session === 'expired' ? 'session_expired' : 'unauthorized');
      return;
    }
    await services.follower.catchUp();
    const groups = groupsOf(services, person.name);
    const leave = services.hub.join(socket, groups, services.projection.queue(groups));
    socket.on('close', leave);
    socket.on('error', leave);
  });
}
