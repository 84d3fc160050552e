import { type ChildProcess, spawn } from 'node:child_process';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort, onFreePorts, untilReady } from './ready.ts';

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

export { freePort };

function launch(nodeArgs: string[], script: string, env: Record<string, string>): { child: ChildProcess; stderr(): string; stop(): Promise<string> } {
  // A compiled bundle runs as production runs it; TypeScript through tsx.
  const child = spawn(process.execPath, [...nodeArgs, ...(script.endsWith('.ts') ? ['--import', 'tsx'] : []), script], {
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
  /** How often `/readyz` is asked while the server starts (default 100 ms): a start-up timed to ready asks more often. */
  readyPollMs?: number;
  /** The server's entry point: `server/main.ts` through tsx unless told, or the compiled `dist/server/main.js`. */
  entry?: string;
}

/** `server/main.ts` as its own process, ready (`/readyz`) on a free port of 127.0.0.1. */
export async function startServerProcess(spec: ServerSpec): Promise<Started> {
  return onFreePorts(async () => {
    const port = await freePort();
    const started = launch(spec.nodeArgs ?? [], spec.entry ?? 'server/main.ts', {
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
    await untilReady(started.child, url, started.stderr, spec.readyTimeoutMs ?? READY_TIMEOUT_MS, started.stop, spec.readyPollMs);
    return { ...started, url };
  });
}
