/**
 * Where each Playwright worker's own server listens. Every worker has a server of its own (its own
 * data folder, application clock and sandbox), so a journey that moves the clock or counts the
 * inbox never sees another worker's. Playwright sets TEST_PARALLEL_INDEX in each worker process,
 * where this file and playwright.config.ts are read again; the main process reads them as worker 0.
 */
const BASE_PORT = Number(process.env.E2E_PORT ?? 4173);
const BASE_SANDBOX_PORT = Number(process.env.E2E_SANDBOX_PORT ?? 4174);
/** Far enough apart that worker 1 misses the restart journey's own server (4183 and 4184). */
const STRIDE = 20;

/** The server and sandbox ports of worker `index`. */
export function workerPorts(index: number): { port: number; sandboxPort: number } {
  return { port: BASE_PORT + STRIDE * index, sandboxPort: BASE_SANDBOX_PORT + STRIDE * index };
}

/** This process's worker: 0 in the main process. */
export const WORKER_INDEX = Number(process.env.TEST_PARALLEL_INDEX ?? 0);

/** How many workers run the journeys, each against its own server (E2E_WORKERS, 1 by default). */
export const WORKERS = Math.max(1, Number(process.env.E2E_WORKERS ?? 1));
