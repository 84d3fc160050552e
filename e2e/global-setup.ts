import { WORKERS } from './ports.ts';
import { saveLogins } from './stored-logins.ts';

/** Runs once, after the servers are ready: every person logged in to each worker's server. */
export default async function globalSetup(): Promise<void> {
  for (let index = 0; index < WORKERS; index++) await saveLogins(index);
}
