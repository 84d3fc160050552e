import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../app/services.ts';
import { type Ask, allows, allowsOn } from '../access/rules.ts';
import { SESSION_COOKIE } from './session-routes.ts';
import { Presence, readViewing } from '../live/presence.ts';
import { PresenceRelay } from '../live/presence-relay.ts';
import { watchSession } from '../live/session-watch.ts';
import { AppError } from './errors.ts';
import { LIVE_PATH } from './openapi.ts';
import type { SessionStore } from '../sessions/sessions.ts';

/**
 * The approvers' live feed: a websocket that first sends the person's current inbox, then every
 * change to items of their groups. The session cookie authenticates the upgrade; SameSite=Strict
 * keeps other sites from opening it with the person's cookie.
 */
export async function liveRoute(app: FastifyInstance, opts: { services: Services; sessions: SessionStore }): Promise<void> {
  const { services, sessions } = opts;
  const join: Ask = { resource: 'live_feed', verb: 'join' };
  const presenceAsk: Ask = { resource: 'live_feed', verb: 'presence' };
  // Who views which item: told to everyone who may see it, never journaled. The item's groups
  // are read from the views as they last caught up (presence is a courtesy, not a decision).
  let latestInbox: Awaited<ReturnType<Services['views']['current']>>['inbox'] | null = null;
  // An item finished for good is no longer in the views' memory: its groups are read from its row
  // when a page says it views it, and kept while it may be viewed (a bounded few).
  const viewedGroups = new Map<string, ReadonlySet<string>>();
  // The other servers on the storage tell theirs and hear ours (presence-relay.ts); the server is named as its leases name it.
  const relay = new PresenceRelay({ signals: services.storage.signals, server: services.workLeases.holder });
  const presence = new Presence({
    groupsOfItem: (effectId) => latestInbox?.chains.get(effectId)?.groups ?? viewedGroups.get(effectId) ?? new Set<string>(),
    nowMs: () => services.clock.nowMs(),
    elsewhere: relay,
  });
  // Not heard from the others (the storage closing as the app is built), presence is this server's alone.
  await relay.start(presence).catch((error: unknown) => app.log.warn({ err: error }, 'presence cannot be heard from the other servers; it is shown from this one only'));
  app.addHook('onClose', async () => relay.stop());
  // Before the upgrade, so a page is told 503 journal_unavailable as a plain answer, and a
  // handshake the websocket library would refuse is refused in the contract's shape.
  const viewsAvailable = async (request: FastifyRequest) => {
    services.views.assertAvailable();
    assertHandshake(request.headers);
  };
  // Described in the OpenAPI document by openapi.ts: the generator cannot describe an upgrade.
  // A GET that does not ask to upgrade is answered in the contract's shape (the websocket
  // plugin's own answer to it is an empty 404).
  app.route({
    method: 'GET',
    url: LIVE_PATH,
    schema: { hide: true },
    config: { access: join },
    preValidation: viewsAvailable,
    handler: async () => {
      throw new AppError('validation_failed', 'the live feed is a websocket: connect with Upgrade: websocket');
    },
    wsHandler: async (socket, request) => {
      // Opening (or reopening, after a dropped connection) the feed is no activity of the person's: it does not keep the session alive.
      const session = await sessions.check(request.cookies[SESSION_COOKIE]);
      const person = session && session !== 'expired' ? services.config.people.find((p) => p.name === session.name) : undefined;
      if (person === undefined || session === null || session === 'expired') {
        socket.close(4401, session === 'expired' ? 'session_expired' : 'unauthorized');
        return;
      }
      // The feed lives only as long as its session: a logout, or a timeout found, closes it, saying which.
      const stopListening = sessions.onEnded((ended, why) => {
        if (ended === session) socket.close(4401, why === 'expired' ? 'session_expired' : 'unauthorized');
      });
      socket.on('close', stopListening);
      // Nor beyond its idle or absolute limit, however quiet the page (no request comes to find it),
      // and the page is warned before: watching never keeps a session alive.
      const stopWatching = watchSession({
        sessions,
        session,
        idleMs: services.config.sessions.idleMs,
        wallMs: () => services.clock.wallMs(),
        nowMs: () => services.clock.nowMs(),
        send: (message) => {
          if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
        },
      });
      socket.on('close', stopWatching);
      // What the page says before its presence is set up (it may say what it views as soon as its
      // snapshot came, while the server still reads the views) is kept, a few messages at most,
      // and heard once it is.
      const early: Buffer[] = [];
      const keepEarly = (data: Buffer) => {
        if (early.length < EARLY_MESSAGES_KEPT) early.push(data);
      };
      socket.on('message', keepEarly);
      let leave: () => void;
      try {
        // Finance hears every group's items, read only. Asked of the access rules at each change,
        // with the config's groups as they are then.
        leave = await services.views.join(socket, { has: (group) => allowsOn(person, services.config.groups, join, [group]) });
      } catch (error) {
        // The views could not catch up (a journal that failed a check is reported by the views).
        if (!services.views.report(error)) request.log.error({ err: error }, 'live feed could not start');
        socket.close(1011, 'journal_unavailable');
        return;
      }
      // The session ended while the feed was joining: the socket is closing, and its feed goes with it.
      if (socket.readyState !== socket.OPEN) {
        leave();
        return;
      }
      latestInbox = (await services.views.current()).inbox;
      // Finance is never shown as viewing an item: approvers would take it for someone who can decide it.
      if (!allows(person, presenceAsk)) {
        socket.off('message', keepEarly);
        socket.on('close', leave);
        socket.on('error', leave);
        return;
      }
      const viewer = { name: person.name, display_name: person.displayName };
      presence.join(socket, viewer, (itemGroups) => allowsOn(person, services.config.groups, presenceAsk, itemGroups));
      const hear = (data: Buffer) => {
        const said = readViewing(data.toString('utf8'));
        if (said === null) return;
        void services.views
          .current()
          .then(async ({ inbox }) => {
            latestInbox = inbox;
            const viewed = said.effect_id;
            if (viewed !== null && !inbox.chains.has(viewed) && !viewedGroups.has(viewed)) {
              const summary = await inbox.summary(viewed);
              if (viewedGroups.size >= VIEWED_GROUPS_KEPT) viewedGroups.clear();
              if (summary !== null) viewedGroups.set(viewed, summary.groups);
            }
            presence.view(socket, viewed);
          })
          .catch(() => {});
      };
      socket.off('message', keepEarly);
      socket.on('message', hear);
      for (const data of early.splice(0)) hear(data);
      const gone = () => {
        leave();
        presence.leave(socket);
      };
      socket.on('close', gone);
      socket.on('error', gone);
    },
  });
}

/** Messages a page sends before its presence is set up that are kept to be heard then; more are dropped. */
const EARLY_MESSAGES_KEPT = 8;

/** Groups of viewed items finished for good kept at most; beyond it they are read again. */
const VIEWED_GROUPS_KEPT = 1_000;

/** A websocket key as RFC 6455 makes it: 16 random bytes in base64. */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;
/** A subprotocol's name: an HTTP token (RFC 7230 tchar), as the websocket library reads it. */
const SUBPROTOCOL = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** The protocol versions the websocket library speaks. */
const WEBSOCKET_VERSIONS = new Set(['8', '13']);

/**
 * An upgrade the websocket library would refuse with a plain-text line (no key, a malformed key,
 * a version it does not speak, a subprotocol list it cannot read) is refused here as `400 validation_failed`, naming the header.
 */
function assertHandshake(headers: FastifyRequest['headers']): void {
  if (headers.upgrade?.toLowerCase() !== 'websocket') return;
  const key = headers['sec-websocket-key'];
  if (typeof key !== 'string' || !WEBSOCKET_KEY.test(key)) {
    throw new AppError('validation_failed', 'not a websocket handshake: Sec-WebSocket-Key must be 16 random bytes in base64 (RFC 6455)');
  }
  const version = headers['sec-websocket-version'];
  if (typeof version !== 'string' || !WEBSOCKET_VERSIONS.has(version)) {
    throw new AppError('validation_failed', 'not a websocket handshake this server speaks: Sec-WebSocket-Version must be 13');
  }
  const protocols = headers['sec-websocket-protocol'];
  if (protocols !== undefined) {
    const names = (Array.isArray(protocols) ? protocols.join(',') : protocols).split(',').map((name) => name.replace(/^[ \t]+|[ \t]+$/g, ''));
    if (!names.every((name) => SUBPROTOCOL.test(name)) || new Set(names).size !== names.length) {
      throw new AppError('validation_failed', 'not a websocket handshake: Sec-WebSocket-Protocol must be a list of distinct subprotocol names, separated by commas');
    }
  }
}
