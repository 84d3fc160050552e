import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { sleep } from './stats.ts';

/** The repository root: where the server and the sandbox are started from. */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** A process that is not ready in this long is broken, not slow. */
const READY_TIMEOUT_MS = 60_000;
/** How long a SIGTERM may take (a profiled process writes its profile then) before the process is SIGKILLed. */
const STOP_TIMEOUT_MS = 60_000;

/** A process the bench started, and how to stop it. */
export interface Started {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** SIGTERM, wait for the exit (SIGKILL after a bound); resolves with how it ended. */
  stop(): Promise<string>;
}

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

function launch(nodeArgs: string[], script: string, env: Record<string, string>): { child: ChildProcess; stderr(): string; stop(): Promise<string> } {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', script], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-20_000);
  });
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    const how = await exited;
    clearTimeout(timer);
    return how;
  };
  return { child, stderr: () => stderr, stop };
}

/** The Stripe sandbox as its own process, on a free port; state in memory. */
export async function startSandboxProcess(): Promise<Started> {
  const started = launch([], 'server/sandbox/main.ts', { PORT: '0', HOST: '127.0.0.1' });
  const lines = readline.createInterface({ input: started.child.stdout! });
  const timer = setTimeout(() => started.child.kill('SIGKILL'), READY_TIMEOUT_MS);
  try {
    for await (const line of lines) {
      const said = JSON.parse(line) as { ready?: boolean; url?: string };
      if (said.ready && said.url) return { ...started, url: said.url };
    }
  } finally {
    clearTimeout(timer);
  }
  throw new Error(`the sandbox ended before it was ready: ${started.stderr()}`);
}

/** What a server process is started with. */
export interface ServerSpec {
  dataDir: string;
  sandboxUrl: string;
  configPath: string;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeArgs?: string[];
  /** Extra environment, e.g. a secret the config names by `*_env`. */
  env?: Record<string, string>;
  /** How long the start-up may take (default READY_TIMEOUT_MS): a server over a big journal replays it first. */
  readyTimeoutMs?: number;
}

/** How many ports a server is started on when the one found free is taken before it listens. */
const PORT_ATTEMPTS = 3;

/** `server/main.ts` as its own process, ready (`/readyz`) on a free port of 127.0.0.1. */
export async function startServerProcess(spec: ServerSpec): Promise<Started> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerProcessOnce(spec);
    } catch (error) {
      // Another process took the port between freePort() and the server's listen: another port.
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

/** The server could not listen on the port found free: it was taken meanwhile. */
class PortTakenError extends Error {}

async function startServerProcessOnce(spec: ServerSpec): Promise<Started> {
  const port = await freePort();
  const started = launch(spec.nodeArgs ?? [], 'server/main.ts', {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: spec.dataDir,
    INTERLOCK_CONFIG: spec.configPath,
    STRIPE_SANDBOX_URL: spec.sandboxUrl,
    SANDBOX_DEMO: '0',
    LOG_LEVEL: 'silent',
    ...spec.env,
  });
  const url = `http://127.0.0.1:${port}`;
  const readyTimeoutMs = spec.readyTimeoutMs ?? READY_TIMEOUT_MS;
  const deadlineMs = Date.now() + readyTimeoutMs;
  for (;;) {
    if (started.child.exitCode !== null || started.child.signalCode !== null) {
      throw new (started.stderr().includes('EADDRINUSE') ? PortTakenError : Error)(`the server exited before it was ready: ${started.stderr()}`);
    }
    try {
      // Bounded: whatever holds the port may accept and never answer.
      if ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) })).ok) return { ...started, url };
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadlineMs) {
      await started.stop();
      throw new Error(`the server was not ready in ${readyTimeoutMs} ms: ${started.stderr()}`);
    }
    await sleep(100);
  }
}
