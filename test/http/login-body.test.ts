import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld, DEMO_PASSWORD } from '../support/app-world.ts';

// The login body is refused like every other body: a field the route does not know (say a
// "role" someone hopes will be honoured) or a value of the wrong shape is 400 validation_failed
// naming the field, and no session is made. A refused body is not a failed password either, so it
// never counts towards the pause after repeated failures.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

const login = (payload: unknown) => world.app.inject({ method: 'POST', url: '/api/session', payload: payload as object });

describe('POST /api/session body', () => {
  it.each([
    ['an unknown field', 'role', { name: 'ana', password: DEMO_PASSWORD, role: 'finance' }],
    ['an array body', 'body', [{ name: 'ana', password: DEMO_PASSWORD }]],
    ['a number as the name', 'name', { name: 7, password: DEMO_PASSWORD }],
    ['no name', 'name', { password: DEMO_PASSWORD }],
    ['an object as the password', 'password', { name: 'ana', password: { $ne: '' } }],
    ['no password', 'password', { name: 'ana' }],
    ['a password over 1,024 characters', 'password', { name: 'ana', password: 'x'.repeat(1_025) }],
  ])('%s is 400 validation_failed naming %s, and makes no session', async (_name, field, payload) => {
    const response = await login(payload);
    expect([response.statusCode, response.json().error.code]).toEqual([400, 'validation_failed']);
    expect(response.json().error.message.startsWith(`${field}:`)).toBe(true);
    expect(response.headers['set-cookie']).toBeUndefined();
  });

  it('a refused body never counts as a failed login, and a correct login still works', async () => {
    for (let i = 0; i < 6; i++) {
      expect((await login({ name: 'bea', password: DEMO_PASSWORD, role: 'finance' })).statusCode).toBe(400);
    }
    const ok = await login({ name: 'bea', password: DEMO_PASSWORD });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ name: 'bea', role: 'approver', groups: ['ap-leads'] });
    expect(String(ok.headers['set-cookie'])).toMatch(/^interlock_session=/);
  });
});
