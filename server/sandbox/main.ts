/**
 * Run the sandbox as its own process, so it outlives a server that a crash test kills.
 * Env: PORT (0 picks one), HOST, SANDBOX_FILE (durable state), SANDBOX_SETTLE (immediate|manual),
 * WEBHOOK_URL and WEBHOOK_SECRET. Prints one JSON line `{"ready":true,"url":...}` when listening
 * and closes on SIGTERM or SIGINT.
 */
import { SETTLE_MODES } from './engine.ts';
import { type SandboxOptions, startSandbox } from './sandbox.ts';

const options: SandboxOptions = { port: Number(process.env['PORT'] ?? 0), host: process.env['HOST'] ?? '127.0.0.1' };
if (process.env['SANDBOX_FILE']) options.file = process.env['SANDBOX_FILE'];
const settle = SETTLE_MODES.find((mode) => mode === process.env['SANDBOX_SETTLE']);
if (settle !== undefined) options.settle = settle;
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
