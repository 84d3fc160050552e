import Stripe from 'stripe';
import { limits } from '../../shared/limits.ts';
import { PacedHttpClient, registerPacedClient } from './paced-client.ts';

/** A live key was offered: Interlock only ever talks to Stripe test mode. */
export class LiveKeyError extends Error {
  readonly code = 'live_key_refused';
}

/** Where the SDK should connect: real Stripe, or the local sandbox. */
export interface StripeEndpoint {
  host?: string;
  port?: number;
  protocol?: 'http' | 'https';
}

/**
 * A real `stripe` SDK client, refusing live keys, with no hidden retries (the gate owns retries),
 * on the paced transport: once the services attach the process's Stripe budget, every call it
 * makes waits for its place.
 */
export function createStripeClient(apiKey: string, endpoint: StripeEndpoint = {}): Stripe {
  if (!/^(sk|rk)_test_[A-Za-z0-9_]+$/.test(apiKey)) {
    throw new LiveKeyError('only Stripe test-mode keys (sk_test_ or rk_test_) are accepted; live keys are refused');
  }
  const transport = new PacedHttpClient();
  const stripe = new Stripe(apiKey, {
    ...endpoint,
    maxNetworkRetries: 0,
    timeout: limits.stripeTimeoutMs,
    telemetry: false,
    httpClient: transport,
  });
  registerPacedClient(stripe, transport);
  return stripe;
}
