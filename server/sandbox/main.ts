/**
 * Run the sandbox as its own process, so it outlives a server that a crash test kills.
 * Env: PORT (0 picks one), HOST, SANDBOX_FILE (durable state), SANDBOX_SETTLE (immediate|manual|at_create),
 * SANDBOX_RATE_LIMITS (off|test|live; off when unset), SANDBOX_EXPAND (honour|ignore),
 * WEBHOOK_URL and WEBHOOK_SECRET. Prints one JSON line `{"ready":true,"url":...}` when listening
 * and closes on SIGTERM or SIGINT.
 */
import { EXPAND_MODES } from './expand.ts';
import { RATE_LIMIT_MODES } from './rate-limits.ts';
import { SETTLE_MODES } from './settings.ts';
import { type SandboxOptions, startSandbox } from './sandbox.ts';

/** A variable from a closed list; unset is the default, anything else stops the process naming it. */
function oneOf<T extends string>(name: string, values: readonly T[]): T | undefined {
  const value = process.env[name];
  if (value === undefined || value === '') return undefined;
  const found = values.find((known) => known === value);
  if (found !== undefined) return found;
  console.error(`sandbox: ${name} must be one of ${values.join(', ')}, not ${JSON.stringify(value)}`);
  process.exit(2);
}

const options: SandboxOptions = { port: Number(process.env['PORT'] ?? 0), host: process.env['HOST'] ?? '127.0.0.1' };
if (process.env['SANDBOX_FILE']) options.file = process.env['SANDBOX_FILE'];
const settle = oneOf('SANDBOX_SETTLE', SETTLE_MODES);
if (settle !== undefined) options.settle = settle;
const rateLimits = oneOf('SANDBOX_RATE_LIMITS', RATE_LIMIT_MODES);
if (rateLimits !== undefined) options.rateLimits = rateLimits;
const expand = oneOf('SANDBOX_EXPAND', EXPAND_MODES);
if (expand !== undefined) options.expand = expand;
const webhookUrl = process.env['WEBHOOK_URL'];
const webhookSecret = process.env['WEBHOOK_SECRET'];
if (webhookUrl && webhookSecret) options.webhook = { url: webhookUrl, secret: webhookSecret };

const sandbox = await startSandbox(options);
process.stdout.write(`${JSON.stringify({ ready: true, url: sandbox.url, port: sandbox.port, pid: process.pid })}\n`);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  sandbox.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(`sandbox: close after ${signal} failed`, error);
      process.exit(1);
    },
  );
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
