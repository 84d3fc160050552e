import { AsyncLocalStorage } from 'node:async_hooks';
import Stripe from 'stripe';
import type { BudgetClass, BudgetGrant, StripeBudget } from './budget.ts';
import { stripeCallOutcome } from './call-times.ts';

/**
 * The Stripe SDK's transport, paced by the process's Stripe budget: every call the SDK makes
 * through a client built with it waits for a place in the budget first, whoever makes it. The
 * class a call is served as comes from the code that runs it (`withStripeClass`), and a grant
 * taken ahead (a routine refund takes its read and its create together) is used when it names the
 * call's endpoint. A read answered 429 did nothing at Stripe: it waits for the budget and is made
 * again, up to `READ_RETRY_MS`; a write answered 429 goes back to its caller (the gate retries a
 * refund under its own idempotency key and claim).
 */

/** How long a read answered 429 is made again before the caller is told. */
export const READ_RETRY_MS = 60_000;
const READ_BACKOFF_FIRST_MS = 100;
const READ_BACKOFF_MAX_MS = 2_000;

/** Who a call is made for, and what was granted ahead of it. */
interface CallContext {
  klass: BudgetClass;
  grant: BudgetGrant | null;
}

const context = new AsyncLocalStorage<CallContext>();

/** Run `work` with its Stripe calls served as `klass`, using `grant` first where it names the call. */
export function withStripeClass<T>(klass: BudgetClass, work: () => Promise<T>, grant?: BudgetGrant | null): Promise<T> {
  // A grant taken around this code stays usable inside it, whatever class the inner calls are.
  return context.run({ klass, grant: grant ?? context.getStore()?.grant ?? null }, work);
}

/** Whether the grant held around this code still has a place for each of these endpoints. */
export function heldGrantCovers(endpoints: readonly string[]): boolean {
  const grant = context.getStore()?.grant;
  return grant !== null && grant !== undefined && endpoints.every((endpoint) => grant.has(endpoint));
}

/** Give back the unused places of the grant held around this code (it stays held, with nothing left). */
export function releaseHeldGrant(): void {
  context.getStore()?.grant?.release();
}

/** The class the calls made here are served as (background unless someone said otherwise). */
export function currentStripeClass(): BudgetClass {
  return context.getStore()?.klass ?? 'background';
}

/**
 * The endpoint of a call as Stripe counts its limits: the method and the path with every object id
 * as `:id` (`GET /v1/payment_intents/:id`, `POST /v1/refunds`, `GET /v1/refunds`).
 */
export function endpointOf(method: string, path: string): string {
  const bare = path.split('?')[0] ?? path;
  const parts = bare.split('/').filter((p) => p.length > 0);
  // /v1/<resource>/<id>/<resource>/<id>...: every second segment after the version is an id.
  const named = parts.map((part, i) => (i >= 2 && i % 2 === 0 ? ':id' : part));
  return `${method.toUpperCase()} /${named.join('/')}`;
}

/** The endpoints a routine refund spends: one read of the payment, one refund created. */
export const READ_PAYMENT = 'GET /v1/payment_intents/:id';
export const CREATE_REFUND = 'POST /v1/refunds';

type Transport = Stripe.HttpClient;

/** The paced transport. */
export class PacedHttpClient extends Stripe.HttpClient {
  budget: StripeBudget | null = null;
  readonly #inner: Transport;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(inner: Transport = Stripe.createNodeHttpClient(), sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))) {
    super();
    this.#inner = inner;
    this.#sleep = sleep;
  }

  override getClientName(): string {
    return `paced-${this.#inner.getClientName()}`;
  }

  override async makeRequest(
    host: string,
    port: string,
    path: string,
    method: string,
    headers: Parameters<Transport['makeRequest']>[4],
    requestData: string,
    protocol: string,
    timeout: number,
  ): ReturnType<Transport['makeRequest']> {
    const budget = this.budget;
    if (budget === null) return this.#inner.makeRequest(host, port, path, method, headers, requestData, protocol, timeout);
    const endpoint = endpointOf(method, path);
    const read = method.toUpperCase() === 'GET';
    const startedMs = budget.nowMs();
    for (let attempt = 0; ; attempt++) {
      const { klass, place } = await this.#place(budget, endpoint);
      budget.called(endpoint, klass);
      let response: Awaited<ReturnType<Transport['makeRequest']>>;
      const sentAt = performance.now();
      try {
        response = await this.#inner.makeRequest(host, port, path, method, headers, requestData, protocol, timeout);
      } catch (error) {
        budget.callTimes.answered(endpoint, stripeCallOutcome(null), (performance.now() - sentAt) / 1000);
        throw error;
      } finally {
        // Stripe may have counted the call at any moment until its answer: the place is held a second from then.
        place.finished();
      }
      budget.callTimes.answered(endpoint, stripeCallOutcome(response.getStatusCode()), (performance.now() - sentAt) / 1000);
      if (response.getStatusCode() !== 429) return response;
      budget.rateLimited(endpoint);
      const waitedMs = budget.nowMs() - startedMs;
      if (!read || waitedMs >= READ_RETRY_MS) return response;
      discard(response);
      const backoff = Math.min(READ_BACKOFF_MAX_MS, READ_BACKOFF_FIRST_MS * 2 ** attempt);
      await this.#sleep(backoff / 2 + Math.random() * (backoff / 2));
    }
  }

  /** Use the grant taken ahead for this endpoint, else wait for a place of the caller's class. */
  async #place(budget: StripeBudget, endpoint: string): Promise<{ klass: BudgetClass; place: { finished(): void } }> {
    const ahead = context.getStore();
    const klass = ahead?.klass ?? 'background';
    const held = ahead?.grant?.use(endpoint);
    if (held) return { klass, place: held };
    const grant = await budget.take(klass, [endpoint]);
    const place = grant.use(endpoint);
    if (!place) throw new Error('a grant just taken for one call has no place for it');
    return { klass, place };
  }
}

/** A response not handed on: its body is drained so the connection can be used again. */
function discard(response: Stripe.HttpClientResponse): void {
  if (typeof response.dispose === 'function') {
    response.dispose();
    return;
  }
  const raw: unknown = response.getRawResponse();
  if (typeof raw === 'object' && raw !== null && 'resume' in raw && typeof raw.resume === 'function') raw.resume();
}

const transports = new WeakMap<Stripe, PacedHttpClient>();

/** Remember the paced transport of a client built with it, so its budget can be attached later. */
export function registerPacedClient(stripe: Stripe, transport: PacedHttpClient): void {
  transports.set(stripe, transport);
}

/**
 * Put a client's calls on this budget. A client not built with the paced transport is refused:
 * every Stripe call Interlock makes must draw on the one budget.
 */
export function attachBudget(stripe: Stripe, budget: StripeBudget): void {
  const transport = transports.get(stripe);
  if (!transport) throw new Error('this Stripe client was not built by createStripeClient, so its calls could not be paced');
  transport.budget = budget;
}

/** The budget a client's calls draw on, if any. */
export function budgetOf(stripe: Stripe): StripeBudget | null {
  return transports.get(stripe)?.budget ?? null;
}
