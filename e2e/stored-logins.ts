import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { request } from '@playwright/test';
import { WORKER_INDEX, workerPorts } from './ports.ts';

/**
 * Each person's login, made once per server before the journeys start (e2e/global-setup.ts) and
 * saved as Playwright storage state (the session cookie): logIn and personPage reuse it instead of
 * logging in again in every journey. The journeys that test logging in itself use the form.
 */

/** Everyone e2e/interlock.e2e.yaml lets log in. */
export const PEOPLE = ['ana', 'bea', 'cy', 'fm', 'ops', 'rita', 'fin'] as const;
/** The demo password from interlock.yaml (local demo only, published there). */
export const PASSWORD = 'interlock-demo';
const FOLDER = 'test-results/e2e-logins';

/** Where `name`'s saved login for worker `index`'s server is kept. */
export function storedLoginPath(name: string, index = WORKER_INDEX): string {
  return `${FOLDER}/${workerPorts(index).port}-${name}.json`;
}

/** The saved login of `name` on this worker's server, or null when none was saved. */
export function storedLogin(name: string): string | null {
  const path = storedLoginPath(name);
  return existsSync(path) ? path : null;
}

/** Log every person in to worker `index`'s server over the API, saving each one's storage state. */
export async function saveLogins(index: number): Promise<void> {
  const baseURL = `http://127.0.0.1:${workerPorts(index).port}`;
  mkdirSync(FOLDER, { recursive: true });
  for (const name of PEOPLE) {
    const path = storedLoginPath(name, index);
    rmSync(path, { force: true });
    const context = await request.newContext({ baseURL });
    try {
      const response = await context.post('/api/session', { data: { name, password: PASSWORD } });
      if (!response.ok()) throw new Error(`logging ${name} in to ${baseURL} answered ${response.status()}: ${await response.text()}`);
      await context.storageState({ path });
    } finally {
      await context.dispose();
    }
  }
}
