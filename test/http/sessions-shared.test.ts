import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../../server/sandbox/index.ts';
import { SESSION_CONFIRM_MS } from '../../server/sessions/sessions.ts';
import { DEMO_PASSWORD } from '../support/app-world.ts';
import { serversOnOneJournal, writeTestConfig } from '../support/server-process.ts';

// Sessions live in the store every server on one SQLite file shares, read through a cache that is
// believed for a second: a login on one server works on the others at once, and a logout on one
// is refused by the others within a second.

/** How long past the second the refusal may take to be seen here: a request's way there and back on a busy machine. */
const SLACK_MS = 500;

describe('sessions across 2 OS processes sharing one journal', () => {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-sessions-'));
  const group = serversOnOneJournal(dir);
  afterAll(async () => {
    await group.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a login on A works on B; a logout on B is refused by A within a second', async () => {
    const sandbox = await startSandbox({ port: 0 });
    try {
      const config = writeTestConfig(dir, { unpaced: true });
      const [a, b] = await group.start(2, { INTERLOCK_CONFIG: config, STRIPE_SANDBOX_URL: sandbox.url });
      const login = await fetch(`${a!.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ana', password: DEMO_PASSWORD }) });
      expect(login.status).toBe(200);
      const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;
      const { csrf_token: csrf } = (await login.json()) as { csrf_token: string };
      const whoAmI = (server: { url: string }) => fetch(`${server.url}/api/session`, { headers: { cookie } });

      const onB = await whoAmI(b!);
      expect(onB.status).toBe(200);
      expect(await onB.json()).toMatchObject({ name: 'ana' });
      // A has just read the session: its copy is as fresh as it gets when the logout comes.
      expect((await whoAmI(a!)).status).toBe(200);
      const logout = await fetch(`${b!.url}/api/session`, { method: 'DELETE', headers: { cookie, 'x-csrf-token': csrf } });
      expect(logout.status).toBe(200);
      const loggedOutMs = Date.now();
      expect((await whoAmI(b!)).status).toBe(401);

      let refusedAfterMs: number | null = null;
      while (Date.now() - loggedOutMs < SESSION_CONFIRM_MS + 5_000) {
        const answer = await whoAmI(a!);
        if (answer.status === 401) {
          refusedAfterMs = Date.now() - loggedOutMs;
          expect(await answer.json()).toMatchObject({ error: { code: 'unauthorized' } });
          break;
        }
        expect(answer.status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(refusedAfterMs).not.toBeNull();
      expect(refusedAfterMs!).toBeLessThanOrEqual(SESSION_CONFIRM_MS + SLACK_MS);
    } finally {
      await sandbox.close();
    }
    // Two real servers start first: on a machine busy with the rest of the suite, that alone can take 20 s.
  }, 90_000);
});
