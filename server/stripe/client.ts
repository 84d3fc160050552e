import Stripe from 'stripe';
import { limits } from '../../shared/limits.ts';
import { PacedHttpClient, registerPacedClient } from './paced-client.ts';

/** A key Interlock does not take: a live key outside live mode, or a full live secret key at all. */
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
 * A real `stripe` SDK client with no hidden retries (the gate owns retries), on the paced
 * transport: once the services attach the process's Stripe budget, every call it makes waits for
 * its place. It takes test-mode keys; with `live`, a live restricted key (`rk_live_`) and nothing
 * else. A full live secret key (`sk_live_`) is never taken.
 */
export function createStripeClient(apiKey: string, endpoint: StripeEndpoint = {}, options: { live?: boolean } = {}): Stripe {
  const live = options.live === true;
  if (live && !/^rk_live_[A-Za-z0-9_]+$/.test(apiKey)) throw new LiveKeyError('live mode takes a live restricted key (rk_live_) only');
  if (!live && !/^(sk|rk)_test_[A-Za-z0-9_]+$/.test(apiKey)) {
    throw new LiveKeyError('only Stripe test-mode keys (sk_test_ or rk_test_) are accepted outside live mode');
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
