import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { ErrorCode, SessionInfo } from '../../shared/api.ts';
import { LoginBodySchema, responses, SessionInfoSchema } from '../../shared/schemas.ts';
import type { PersonConfig } from '../config/schema.ts';
import { verifyPassword } from '../config/secrets.ts';
import { limits } from '../../shared/limits.ts';
import { assertNever } from '../../shared/statuses.ts';
import { demoTrafficRuns } from '../demo/status.ts';
import type { Services } from '../app/services.ts';
import { DEVICE_COOKIE, DeviceCookies } from '../throttle/device-cookie.ts';
import { type LoginCheck, LoginThrottle } from '../throttle/login-throttle.ts';
import { groupsOf, showsPerson } from '../access/rules.ts';
import { personOf } from './access-guard.ts';
import { AppError } from './errors.ts';
import type { Session, SessionStore } from '../sessions/sessions.ts';

export const SESSION_COOKIE = 'interlock_session';
/** The header of a read a page makes by itself, not its person (web/src/api-client.ts): it leaves the session's idle time running. */
export const BACKGROUND_HEADER = 'x-interlock-background';

declare module 'fastify' {
  interface FastifyRequest {
    person?: PersonConfig;
    session?: Session;
  }
}

/** A scrypt hash of nothing anyone types: an unknown name costs as much time as a wrong password. */
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

/** What a person is told when a login must wait: the same for a name that exists and one that does not. */
function waitMessage(check: Extract<LoginCheck, { kind: 'wait' }>, waitS: number): string {
  const wait = waitS < 120 ? `${waitS} second${waitS === 1 ? '' : 's'}` : `${Math.ceil(waitS / 60)} minutes`;
  switch (check.why) {
    case 'address':
      return `too many failed logins for this name from here; try again in ${wait}`;
    case 'name':
      return `too many failed logins for this name from browsers it has not logged in from; try again in ${wait}, or from a browser where it has logged in before`;
    case 'address-all-names':
      return `too many failed logins from here, across names; try again in ${wait}, or from a browser where this name has logged in before`;
    default:
      return assertNever(check.why);
  }
}

export interface SessionRouteOptions {
  services: Services;
  sessions: SessionStore;
  secureCookies: boolean;
}

function sessionInfo(services: Services, person: PersonConfig, session: Session): SessionInfo {
  return {
    name: person.name,
    display_name: person.displayName,
    role: person.role,
    groups: [...groupsOf(person.name, services.config.groups)].sort(),
    csrf_token: session.csrfToken,
    sandbox: services.sandbox,
    demo: demoTrafficRuns(services),
    live: services.config.stripe.mode === 'live',
  };
}

/**
 * Every route of the approvers' scope needs a live session, and every state-changing call the
 * session's CSRF token: installed on the scope, so each plugin registered in it inherits it.
 * Logging in is no route of it (`loginRoute` is registered beside the scope, not in it).
 */
export function installSessionAuth(scope: FastifyInstance, services: Services, sessions: SessionStore): void {
  scope.addHook('onRequest', async (request) => {
    // A read the page made by itself (the live feed said something moved) does not keep the session
    // alive, and neither does opening the live feed (or opening it again after a dropped connection).
    const read = request.method === 'GET' || request.method === 'HEAD';
    const background = read && (request.headers[BACKGROUND_HEADER] === '1' || request.headers.upgrade?.toLowerCase() === 'websocket');
    const cookie = request.cookies[SESSION_COOKIE];
    const found = await (background ? sessions.check(cookie) : sessions.touch(cookie));
    if (found === 'expired') throw new AppError('session_expired', 'your session expired; log in again');
    const person = found ? services.config.people.find((p) => p.name === found.name) : undefined;
    if (!found || !person) throw new AppError('unauthorized', 'log in first');
    request.session = found;
    request.person = person;
    if (request.method !== 'GET' && request.method !== 'HEAD' && request.headers['x-csrf-token'] !== found.csrfToken) {
      throw new AppError('csrf_failed', 'this request did not come from the Interlock page');
    }
  });
}

/** The session cookie, set on logging in and cleared on logging out. */
function setSessionCookie(reply: FastifyReply, secure: boolean, value: string, maxAgeS: number): void {
  reply.setCookie(SESSION_COOKIE, value, { httpOnly: true, sameSite: 'strict', secure, path: '/', maxAge: maxAgeS });
}

/**
 * Logging in: a session cookie (HttpOnly, SameSite=Strict) and the CSRF token every
 * state-changing call sends back. Registered outside the session's scope, since it is how a
 * session starts; it shows nothing of the journal, so it answers while the journal stands failed
 * (a person can still log in and be told 503 by everything else).
 */
export async function loginRoute(scope: FastifyInstance, opts: SessionRouteOptions): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services, sessions } = opts;
  const wallMs = () => services.clock.wallMs();
  const throttle = new LoginThrottle({
    failuresPerHour: services.config.throttle.loginFailuresPerHour,
    addressFailuresPerHour: services.config.throttle.loginAddressFailuresPerHour,
    wallMs,
    // The storage's: on PostgreSQL every server counts every other's failures.
    store: services.storage.loginThrottles,
  });
  const devices = new DeviceCookies(services.signingKey.privateKey, wallMs);
  // Sent back to the login route only: nothing else needs to know which browser this is.
  const deviceCookie = (reply: FastifyReply, name: string) =>
    reply.setCookie(DEVICE_COOKIE, devices.issue(name), {
      httpOnly: true,
      sameSite: 'strict',
      secure: opts.secureCookies,
      path: '/api/session',
      maxAge: Math.floor(limits.deviceCookieMaxAgeMs / 1000),
    });

  const loginSchema = {
    tags: ['approvers'],
    operationId: 'createSession',
    security: [],
    summary: 'log in: who you are, your groups and your CSRF token',
    body: LoginBodySchema,
    response: responses({ 200: SessionInfoSchema }, ['validation_failed', 'unauthorized', 'rate_limited', 'payload_too_large', 'unsupported_media_type', 'internal_error']),
  };
  app.post('/api/session', { schema: loginSchema, config: { access: { public: 'logging in: the name and password are what it checks' } } }, async (request, reply) => {
    const { name, password } = request.body;
    // Asked before the password is hashed, so a throttled guess costs the server nothing.
    const check = await throttle.check(name, request.ip, devices.names(request.cookies[DEVICE_COOKIE], name));
    if (check.kind === 'wait') {
      const waitS = Math.max(1, Math.ceil(check.waitMs / 1000));
      reply.header('retry-after', String(waitS));
      throw new AppError('rate_limited', waitMessage(check, waitS));
    }
    const person = services.config.people.find((p) => p.name === name);
    const ok = await verifyPassword(password, person?.passwordHash ?? DUMMY_HASH);
    if (!person || !ok) throw new AppError('unauthorized', 'that name and password do not match');
    await throttle.succeeded(name, request.ip);
    const { id, session } = await sessions.create(person.name);
    // The session cookie first: clients that keep one cookie of a login keep the first.
    setSessionCookie(reply, opts.secureCookies, id, Math.floor(services.config.sessions.absoluteMs / 1000));
    deviceCookie(reply, person.name);
    return sessionInfo(services, person, session);
  });
}

/**
 * Who am I, logging out, and the directory, behind a session (`installSessionAuth`). They show
 * nothing of the journal, so they answer while it stands failed.
 */
export async function sessionRoutes(scope: FastifyInstance, opts: SessionRouteOptions): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services, sessions } = opts;
  const approvers = { tags: ['approvers'], security: [{ session: [] }] };
  /** What every call behind a session can be answered besides its own refusals. */
  const sessionErrors: ErrorCode[] = ['unauthorized', 'session_expired', 'internal_error'];
  /** Any signed-in person, about their own session. */
  const signedIn = { access: { signedIn: 'about their own session' } };

  app.get('/api/session', { schema: { ...approvers, operationId: 'getSession', summary: 'who am I', response: responses({ 200: SessionInfoSchema }, sessionErrors) }, config: signedIn }, async (request) =>
    sessionInfo(services, personOf(request), request.session!),
  );

  const logoutSchema = { ...approvers, operationId: 'deleteSession', summary: 'log out', response: responses({ 200: Type.Object({ ok: Type.Literal(true) }) }, [...sessionErrors, 'csrf_failed']) };
  app.delete('/api/session', { schema: logoutSchema, config: signedIn }, async (request, reply) => {
    await sessions.end(request.cookies[SESSION_COOKIE]);
    setSessionCookie(reply, opts.secureCookies, '', 0);
    return { ok: true as const };
  });

  const directorySchema = {
    ...approvers,
    operationId: 'getDirectory',
    summary: 'people by display name, and the quick reasons for a rejection',
    response: responses(
      {
        200: Type.Object({
          people: Type.Array(Type.Object({ name: Type.String(), display_name: Type.String(), role: Type.String() })),
          reject_reasons: Type.Array(Type.String()),
        }),
      },
      sessionErrors,
    ),
  };
  // Names only: no password hash, no group membership beyond what the session already says; the
  // people the access rules show this person.
  app.get('/api/directory', { schema: directorySchema, config: { access: { resource: 'directory', verb: 'list' } } }, async (request) => ({
    people: services.config.people
      .filter((p) => showsPerson(personOf(request), services.config.groups, p))
      .map((p) => ({ name: p.name, display_name: p.displayName, role: p.role })),
    reject_reasons: services.config.rejectReasons,
  }));
}
