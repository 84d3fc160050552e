import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Stripe from 'stripe';
import { onTestFinished } from 'vitest';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../server/sandbox/index.ts';

/** A sandbox for one test, closed when the test finishes. */
export async function useSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const sandbox = await startSandbox(opts);
  onTestFinished(() => sandbox.close());
  return sandbox;
}

/** A clock a test moves by hand; starts at 2026-01-01. */
export function manualClock(startMs = Date.UTC(2026, 0, 1)): { nowMs: () => number; advance: (ms: number) => void } {
  let nowMs = startMs;
  return { nowMs: () => nowMs, advance: (ms) => (nowMs += ms) };
}

/** A webhook request as the endpoint received it: raw bytes, never re-serialised. */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  rawBody: string;
}

/** A local webhook endpoint that records what arrives and answers each request with `answer(n)`. */
export interface WebhookListener {
  url: string;
  received: ReceivedWebhook[];
  /** Resolves once at least `count` requests have arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
}

/**
 * Start a webhook endpoint for one test; `answer` gives the status for the n-th request (from 1),
 * or 'hang' to never answer it.
 */
export async function useWebhookListener(answer: (n: number) => number | 'hang' = () => 200): Promise<WebhookListener> {
  const received: ReceivedWebhook[] = [];
  const waiters: Array<() => void> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8') });
      const status = answer(received.length);
      if (status !== 'hang') res.writeHead(status).end();
      for (const wake of waiters.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as AddressInfo;
  const waitFor = async (count: number, timeoutMs = 5_000): Promise<ReceivedWebhook[]> => {
    const deadlineMs = Date.now() + timeoutMs;
    while (received.length < count) {
      if (Date.now() > deadlineMs) throw new Error(`expected ${count} webhooks, got ${received.length}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return received;
  };
  return { url: `http://127.0.0.1:${port}/webhooks/stripe`, received, waitFor };
}

/** An error the SDK raises. */
export type SdkError = InstanceType<typeof Stripe.errors.StripeError>;

/** The error an SDK call rejects with (fails the test when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<SdkError> {
  try {
    await promise;
  } catch (error) {
    return error as SdkError;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** A local port nothing listens on (it was free a moment ago). */
export async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
