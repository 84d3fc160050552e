import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { INTEGRITY_DEFAULTS } from '../../server/config/integrity.ts';
import { readCheckpoint, signCheckpoint } from '../../server/integrity/checkpoint.ts';
import { originOf } from '../../server/integrity/checkpoints.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// GET /.well-known/interlock-checkpoint: the latest signed checkpoint, to whoever holds a token
// (it tells the journal's size), or to anyone when the config makes it public.

const worlds: AppWorld[] = [];
afterEach(async () => Promise.all(worlds.splice(0).map((world) => world.close())));

const CHECKPOINT_TOKEN = 'checkpoint-reader-token';

async function world(integrity: { checkpointPublic?: boolean; checkpointTokenSha256?: string | null } = {}): Promise<AppWorld> {
  const config = testConfig();
  const built = await buildAppWorld({ config: { ...config, integrity: { ...config.integrity, ...integrity } } });
  worlds.push(built);
  return built;
}

/** A checkpoint of the journal as it is, signed and stored as the server's checkpointer does. */
async function signNow(w: AppWorld): Promise<{ origin: string; size: number; head: string }> {
  const head = w.services.views.head;
  if (head === null) throw new Error('the journal is empty');
  const origin = originOf(await w.services.checkpoints.ensureJournalId(), 0);
  const checkpoint = { origin, size: head.size, head: head.globalHash };
  await w.services.checkpoints.add({ epoch: 0, size: head.size, head: head.globalHash, note: signCheckpoint(checkpoint, w.services.signingKey), signedAtMs: 1_700_000_000_000 });
  return checkpoint;
}

const get = (w: AppWorld, authorization?: string) =>
  w.app.inject({ method: 'GET', url: '/.well-known/interlock-checkpoint', headers: authorization === undefined ? {} : { authorization } });

describe('GET /.well-known/interlock-checkpoint', () => {
  it('answers the latest checkpoint to an agent, with a note that verifies with the public key', async () => {
    const w = await world();
    expect(w.services.config.integrity.checkpointEveryEntries).toBe(INTEGRITY_DEFAULTS.checkpointEveryEntries);
    const pi = await w.payment(10_000);
    await w.agent('POST', '/v1/refunds', { request_id: 'cp-1', payment_intent: pi, amount: 1_000 });
    await w.services.views.current();
    const signed = await signNow(w);
    const response = await get(w, `Bearer ${AGENT_TOKEN}`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    const body = response.json();
    expect(body).toEqual({ ...signed, epoch: 0, signed_at_ms: 1_700_000_000_000, key_id: w.services.signingKey.keyId, note: expect.any(String) });
    const read = readCheckpoint(body.note, { publicKeyPem: w.services.signingKey.publicKeyPem, keyId: body.key_id });
    expect(read.ok && read.checkpoint).toEqual(signed);
  });

  it('is 404 not_found before any checkpoint is signed', async () => {
    const w = await world();
    const response = await get(w, `Bearer ${AGENT_TOKEN}`);
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: { code: 'not_found', message: 'no checkpoint has been signed yet' } });
  });

  it.each([
    ['no token', undefined],
    ['a wrong token', 'Bearer not-a-known-token'],
    ['a session-less cookie header', 'Basic dXNlcjpwYXNz'],
  ])('%s is 401 unauthorized and shows nothing of the journal', async (_name, authorization) => {
    const w = await world();
    const pi = await w.payment(10_000);
    await w.agent('POST', '/v1/refunds', { request_id: 'cp-2', payment_intent: pi, amount: 1_000 });
    await w.services.views.current();
    await signNow(w);
    const response = await get(w, authorization);
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe('unauthorized');
    expect(response.body).not.toMatch(/size|head|note/);
  });

  it('takes the checkpoint token of the config, which is no agent token', async () => {
    const w = await world({ checkpointTokenSha256: createHash('sha256').update(CHECKPOINT_TOKEN).digest('hex') });
    expect((await get(w, `Bearer ${CHECKPOINT_TOKEN}`)).statusCode).toBe(404);
    // The checkpoint token is not an agent's: it asks for no refund.
    const refund = await w.agent('POST', '/v1/refunds', { request_id: 'cp-3', payment_intent: 'pi_x', amount: 1 }, CHECKPOINT_TOKEN);
    expect(refund.statusCode).toBe(401);
  });

  it('answers anyone when integrity.checkpoint_public is set', async () => {
    const w = await world({ checkpointPublic: true });
    const pi = await w.payment(10_000);
    await w.agent('POST', '/v1/refunds', { request_id: 'cp-4', payment_intent: pi, amount: 1_000 });
    await w.services.views.current();
    await signNow(w);
    expect((await get(w)).statusCode).toBe(200);
  });

  it('is in the OpenAPI document with its answer and errors', async () => {
    const w = await world();
    const doc = (await w.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const route = doc.paths['/.well-known/interlock-checkpoint'].get;
    expect(Object.keys(route.responses)).toEqual(expect.arrayContaining(['200', '401', '404', '503']));
    // Either token opens it: an agent's, or the checkpoint token of the config.
    expect(route.security).toEqual([{ agentToken: [] }, { checkpointToken: [] }]);
    expect(doc.components.securitySchemes.checkpointToken).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('every route the document lists that may answer 401 declares the security it takes', async () => {
    const w = await world();
    const doc = (await w.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { security?: Record<string, string[]>[]; responses: Record<string, unknown> }>>;
      components: { securitySchemes: Record<string, unknown> };
    };
    const undeclared = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).flatMap(([method, operation]) => {
        // Logging in answers 401 to a wrong password: it takes a password, and makes the session the others take.
        if (!('401' in operation.responses) || (method === 'post' && path === '/api/session')) return [];
        const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
        return schemes.length > 0 && schemes.every((name) => name in doc.components.securitySchemes) ? [] : [`${method.toUpperCase()} ${path}`];
      }),
    );
    expect(undeclared).toEqual([]);
  });
});
