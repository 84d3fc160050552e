import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_CONFIG_PATH } from '../../server/config/load.ts';
import { PUBLISHED_PASSWORD_HASHES, PUBLISHED_TOKEN_SHA256S } from '../../server/config/published-secrets.ts';
import { hashToken } from '../../server/config/secrets.ts';
import { type Tool, toolCommand } from '../../server/tools.ts';
import { freePort, onFreePorts, untilReady } from '../../bench/ready.ts';
import { AGENT_TOKEN, DEMO_PASSWORD } from './app-world.ts';
import { compiledEntry } from './compiled-entries.ts';

export { compiledEntry };

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
/** A server that is not ready in this long is broken, not slow. */
const READY_TIMEOUT_MS = 30_000;

/**
 * A new receipt signing key (Ed25519, PKCS#8 PEM, mode 0400) at `file`, for `RECEIPT_KEY_PATH`:
 * every process on one journal must sign with the same key.
 */
export function writeReceiptKey(file: string): string {
  writeFileSync(file, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o400 });
  return file;
}

export { freePort };

/** Stripe's limits as the config gives them to a test that is not about Stripe's pace: far above its traffic. */
const UNPACED_STRIPE_YAML = 'stripe: { mode: sandbox, rate_limits: { share: 1, global_per_second: 10000, endpoint_per_second: 10000 } }';

/**
 * The example config with the test clock endpoint on, written into `dir`; `unpaced` lifts
 * Stripe's limits far above the test's traffic, for a test about something else.
 */
export function writeTestConfig(dir: string, options: { unpaced?: boolean } = {}): string {
  const path = join(dir, 'interlock.test.yaml');
  let text = readFileSync(DEFAULT_CONFIG_PATH, 'utf8').replace(/^test_mode: false$/m, 'test_mode: true').replace(/^sla_tick_seconds: \d+/m, 'sla_tick_seconds: 1');
  if (options.unpaced) text = text.replace(/^stripe: .*$/m, UNPACED_STRIPE_YAML);
  writeFileSync(path, text);
  return path;
}

/**
 * Config text with every secret the shipped interlock.yaml publishes replaced by one of an
 * operator's own (well-formed, never published, and not the password of anyone): what Stripe test
 * mode needs before it starts.
 */
export function withOwnSecrets(text: string): string {
  const passwords = PUBLISHED_PASSWORD_HASHES.reduce((out, hash, i) => out.replace(hash, hash.replace(/.{8}=$/, `${String(i).padStart(7, 'x')}A=`)), text);
  return PUBLISHED_TOKEN_SHA256S.reduce((out, hash, i) => out.replace(hash, hashToken(`sk_agent_own_${i}`)), passwords);
}

/** The config text without `name`: out of every group and out of `people`. */
export function withoutPerson(text: string, name: string): string {
  const groupsLess = text.replace(new RegExp(`^(  [a-z-]+: \\[.*)\\b${name}\\b,? ?(.*\\])$`, 'gm'), (_line, head: string, tail: string) =>
    `${head}${tail}`.replace(', ]', ']').replace(/, \]$/, ']'),
  );
  return groupsLess.replace(new RegExp(`^  - name: ${name}\\n(?:    .*\\n)+`, 'm'), '');
}

/** A real Interlock server process. */
export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Resolves with the signal (or exit code) the process ended with. */
  exited: Promise<string>;
  stderr(): string;
  /** The log lines written so far (pino writes to standard output); empty unless started with `logs: true`. */
  stdout(): string;
}

/**
 * How the compiled server names `tool` run with `args` in what it prints (server/tools.ts
 * `toolCommand`): `node test-results/server/verify.js --journal`, where a clone's source would
 * say `npm run verify -- --journal`.
 */
export function compiledToolCommand(tool: Tool, args: string): string {
  return toolCommand(tool, args, pathToFileURL(compiledEntry('main')).href);
}

/** `text` matched literally inside a regular expression. */
export function literally(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Spawn the compiled server with the test defaults under `env`: quiet, no demo payments, on loopback; its log read when `logs`. */
function spawnServer(env: Record<string, string>, logs = false): ChildProcess {
  return spawn(process.execPath, ['--enable-source-maps', compiledEntry('main')], {
    cwd: repoRoot,
    env: { ...process.env, HOST: '127.0.0.1', SANDBOX_DEMO: '0', LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', logs ? 'pipe' : 'ignore', 'pipe'],
  });
}

/** Run the compiled server where it is expected to refuse to start: its exit code (or signal) and what it printed. */
export async function runServerToExit(env: Record<string, string>, { timeoutMs = READY_TIMEOUT_MS }: { timeoutMs?: number } = {}): Promise<{ exit: string; stderr: string }> {
  const child = spawnServer(env);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exit = await new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  clearTimeout(timer);
  return { exit, stderr };
}

/**
 * Start the compiled server and wait until `/readyz` says ready (or the process dies); with `logs`,
 * what it logs is kept for `stdout()` (set LOG_LEVEL in `env`, silent by default). `readyTimeoutMs`
 * (30 s) is how long it may take: more for a test that runs beside other suites' servers and databases.
 */
export async function startServerProcess(env: Record<string, string>, options: { logs?: boolean; readyTimeoutMs?: number } = {}): Promise<ServerProcess> {
  return onFreePorts(async (attempt) => {
    if (attempt > 1) {
      // Another process took a port between freePort() and the server's listen: new ones.
      env = { ...env };
      for (const name of ['PORT', 'SANDBOX_PORT'] as const) {
        if (env[name] !== undefined && env[name] !== '0') env[name] = String(await freePort());
      }
    }
    return startServerProcessOnce(env, options);
  });
}

async function startServerProcessOnce(env: Record<string, string>, options: { logs?: boolean; readyTimeoutMs?: number }): Promise<ServerProcess> {
  const child = spawnServer(env, options.logs === true);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  const url = `http://127.0.0.1:${Number(env.PORT)}`;
  // Not left running when it is not ready: nobody holds it to stop it, and it would outlive the test run.
  await untilReady(child, url, () => stderr, options.readyTimeoutMs ?? READY_TIMEOUT_MS, async () => child.kill('SIGKILL'));
  return { url, child, exited, stderr: () => stderr, stdout: () => stdout };
}

/**
 * Several servers on one journal, as production may run them: one SQLite file (`dbFile`) and one
 * receipt key between them (each signs the journal's checkpoints and checks the newest at start),
 * a data folder each. `stop()` SIGKILLs every one started.
 */
export function serversOnOneJournal(dir: string) {
  const servers: ServerProcess[] = [];
  const dbFile = join(dir, 'shared.sqlite');
  return {
    dbFile,
    /** `count` servers started at once under `env`, ready. */
    async start(count: number, env: Record<string, string>): Promise<ServerProcess[]> {
      const key = writeReceiptKey(join(dir, 'receipt.pem'));
      const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
      // Each held as soon as it is up, so one failing to start leaves none of the others running.
      await Promise.all(
        ports.map(async (port, i) => {
          servers[i] = await startServerProcess({ PORT: String(port), DATA_DIR: join(dir, `server-${i}`), DB_PATH: dbFile, RECEIPT_KEY_PATH: key, ...env });
        }),
      );
      return servers;
    },
    async stop(): Promise<void> {
      const started = servers.filter((server) => server !== undefined);
      for (const server of started) server.child.kill('SIGKILL');
      await Promise.all(started.map((server) => server.exited));
    },
  };
}

/** An HTTP client for a running server: an agent, and people logged in by name. */
export function clientFor(initialUrl: string) {
  let url = initialUrl;
  const sessions = new Map<string, { cookie: string; csrf: string }>();
  const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as Record<string, unknown> & { items?: unknown[] } });
  return {
    get url() {
      return url;
    },
    /** Talk to a restarted server on the same address, keeping the logins. */
    rebase(next: string) {
      url = next;
    },
    agent: async (method: string, path: string, body?: unknown) =>
      json(await fetch(url + path, { method, headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) })),
    async as(name: string, method: string, path: string, body?: unknown) {
      let session = sessions.get(name);
      if (!session) {
        const login = await fetch(`${url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, password: DEMO_PASSWORD }) });
        const info = (await login.json()) as { csrf_token: string };
        session = { cookie: String(login.headers.get('set-cookie')).split(';')[0]!, csrf: info.csrf_token };
        sessions.set(name, session);
      }
      return json(
        await fetch(url + path, {
          method,
          headers: { cookie: session.cookie, 'x-csrf-token': session.csrf, 'content-type': 'application/json' },
          ...(body ? { body: JSON.stringify(body) } : {}),
        }),
      );
    },
  };
}
