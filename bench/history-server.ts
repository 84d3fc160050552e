import { performance } from 'node:perf_hooks';
import type { HistorySize } from './history-args.ts';
import { type Started, startServerProcess } from './processes.ts';
import { CONFIG_PATH } from './stages.ts';

// The history stage's server: started as production starts it, over one size's data folder.

/**
 * How long a start may take before the stage gives up: the first start over 10M entries builds
 * every derived table from the journal, which took more than 30 minutes on 2 busy cores (the
 * stage failed there at its old 30-minute bound), so it is given two hours.
 */
const READY_TIMEOUT_MS = 120 * 60_000;
/** `/readyz` is asked this often while a start-up is timed. */
const READY_POLL_MS = 10;

/** A server's data folder for one size: its journal copy, and the signing key its checkpoints use. */
export interface Site {
  size: HistorySize;
  dataDir: string;
  db: string;
  sandboxUrl: string;
}

/** The server as production runs it (`node dist/server/main.js`, docs/operators/production.md): compiled at the stage's start. */
const COMPILED_ENTRY = 'dist/server/main.js';

/** The server over the site's data folder, ready. */
export function start(site: Site): Promise<Started> {
  return startServerProcess({ dataDir: site.dataDir, sandboxUrl: site.sandboxUrl, configPath: CONFIG_PATH, readyTimeoutMs: READY_TIMEOUT_MS, readyPollMs: READY_POLL_MS, entry: COMPILED_ENTRY });
}

/** SIGTERM and a clean exit, or the stage fails: a start timed after it must follow a clean stop. */
export async function stopCleanly(server: Started): Promise<void> {
  const how = await server.stop();
  if (how !== '0') throw new Error(`the server did not stop cleanly: it ended ${how}: ${server.stderr().trim().split('\n').slice(-3).join(' / ')}`);
}

/** Start to `/readyz` 200, in seconds, and the started server. */
export async function timedStart(site: Site): Promise<{ seconds: number; server: Started }> {
  const startMs = performance.now();
  const server = await start(site);
  return { seconds: (performance.now() - startMs) / 1000, server };
}
