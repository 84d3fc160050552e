import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

// Starting a server process on a port found free, as the bench and the tests both do: the port
// may be taken by another process before the server listens, and whatever took it may never answer.

/** A free port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** The server could not listen: a port found free was taken before the server bound it. */
export class PortTakenError extends Error {}

/** How many times a server is started on new ports when one it was given was taken meanwhile. */
const PORT_ATTEMPTS = 3;

/** `start` again (it picks new ports) while it fails because a port was taken, a few times at most. */
export async function onFreePorts<T>(start: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(attempt);
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

/**
 * Wait until `url`/readyz answers 200, asking every `pollMs`. Throws when the process exits first
 * (PortTakenError if it could not listen) and, past `timeoutMs`, calls `giveUp` (which must end
 * the process: nobody else holds it to stop it) and throws.
 */
export async function untilReady(child: ChildProcess, url: string, stderr: () => string, timeoutMs: number, giveUp: () => Promise<unknown>, pollMs = 100): Promise<void> {
  const deadlineMs = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new (stderr().includes('EADDRINUSE') ? PortTakenError : Error)(`server exited before ready: ${stderr()}`);
    }
    try {
      // Bounded: whatever holds the port may accept and never answer.
      if ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) })).ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadlineMs) {
      await giveUp();
      throw new Error(`server not ready in ${timeoutMs} ms: ${stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
