import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { newId } from './ids.ts';
import { sandboxLimits } from './limits.ts';
import { stringifyInMode, unixSeconds } from './render.ts';
import {
  type ChargeEvent,
  type ChargeEventType,
  DEFAULT_WEBHOOK_EVENTS,
  type Delivery,
  type DisputeEvent,
  type DisputeEventType,
  type RefundEvent,
  type RefundEventType,
  type SandboxEvent,
  type WebhookConfig,
  type WebhookMode,
} from './types.ts';

/** The request that caused an event: null for what happens on its own (a settlement). */
export interface EventCause {
  requestId: string;
  idempotencyKey: string | null;
}

/** The `Stripe-Signature` header Stripe sends: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`. */
export function signatureHeader(body: string, secret: string, timestampSeconds: number): string {
  const v1 = createHmac('sha256', secret).update(`${timestampSeconds}.${body}`, 'utf8').digest('hex');
  return `t=${timestampSeconds},v1=${v1}`;
}

/** Build a Stripe event about a refund. */
export function buildRefundEvent(
  type: RefundEventType,
  refund: Stripe.Refund,
  cause: EventCause | null,
  nowMs: number,
  previous?: Partial<Stripe.Refund>,
): RefundEvent {
  return {
    ...envelope(cause, nowMs),
    data: previous === undefined ? { object: refund } : { object: refund, previous_attributes: previous },
    type,
  };
}

/**
 * Build a Stripe event about a charge: `charge.refunded` when a refund of it is created, the
 * charge as it is now and, in `previous_attributes`, what the refund changed (`amount_refunded`,
 * and `refunded` when it became fully refunded).
 */
export function buildChargeEvent(
  type: ChargeEventType,
  charge: Stripe.Charge,
  cause: EventCause | null,
  nowMs: number,
  previous: Partial<Stripe.Charge>,
): ChargeEvent {
  return { ...envelope(cause, nowMs), data: { object: charge, previous_attributes: previous }, type };
}

/**
 * Build a Stripe event about a dispute: `charge.dispute.created` when the cardholder's bank opens
 * it, `charge.dispute.updated` when it moves (evidence submitted), `charge.dispute.closed` when it
 * is won or lost. The object is the dispute, which names its charge and payment intent.
 */
export function buildDisputeEvent(
  type: DisputeEventType,
  dispute: Stripe.Dispute,
  cause: EventCause | null,
  nowMs: number,
  previous?: Partial<Stripe.Dispute>,
): DisputeEvent {
  return {
    ...envelope(cause, nowMs),
    data: previous === undefined ? { object: dispute } : { object: dispute, previous_attributes: previous },
    type,
  };
}

/** What every event carries besides its type and object. */
function envelope(cause: EventCause | null, nowMs: number): Omit<Stripe.Event, 'data' | 'type'> {
  return {
    id: newId('evt'),
    object: 'event',
    api_version: Stripe.API_VERSION,
    created: unixSeconds(nowMs),
    livemode: false,
    pending_webhooks: 1,
    request: { id: cause?.requestId ?? null, idempotency_key: cause?.idempotencyKey ?? null },
  };
}

interface Job {
  event: SandboxEvent;
  /** The body is fixed at the first attempt, so every retry carries the same bytes. */
  body: string;
  attempt: number;
}

/**
 * Sends events to the configured endpoint, signed like Stripe, off the request path: `emit`
 * only queues. Events raised together form a batch delivered in order (or reversed, as a test
 * switch); a non-2xx answer or a network failure is retried with doubling backoff, a bounded
 * number of times.
 */
export class WebhookSender {
  private config: WebhookConfig | null;
  private mode: WebhookMode = {};
  private batch: SandboxEvent[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private inFlight = 0;
  private readonly log: Delivery[] = [];
  private readonly idleWaiters: Array<() => void> = [];
  private readonly abort = new AbortController();

  constructor(
    private readonly nowMs: () => number,
    config: WebhookConfig | null,
    private readonly live: () => boolean = () => false,
  ) {
    this.config = config;
  }

  configure(config: WebhookConfig | null): void {
    this.config = config;
  }

  setMode(mode: WebhookMode): void {
    this.mode = { ...mode };
  }

  /** Queue an event; nothing is sent when no endpoint is configured or it does not enable the event's type. */
  emit(event: SandboxEvent): void {
    if (this.config === null || this.abort.signal.aborted) return;
    const enabled = this.config.events ?? DEFAULT_WEBHOOK_EVENTS;
    if (!enabled.some((type) => type === '*' || type === event.type)) return;
    if (this.batch.length + this.retryTimers.size >= sandboxLimits.webhookQueueMax) {
      console.warn(`sandbox: webhook queue full, dropping ${event.type} ${event.id}`);
      return;
    }
    this.batch.push(event);
    if (this.flushTimer === null) {
      this.flushTimer = setTimeout(() => void this.flush(), this.mode.delayMs ?? 0);
    }
  }

  /** Every delivery attempt so far (the most recent ones when there were many). */
  deliveries(): Delivery[] {
    return this.log.map((delivery) => ({ ...delivery }));
  }

  /** Resolves once nothing is queued, in flight or waiting for a retry. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stop: pending retries are dropped and requests in flight aborted. */
  close(): void {
    this.abort.abort();
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.retryTimers.clear();
    this.batch = [];
    this.wakeIfIdle();
  }

  private async flush(): Promise<void> {
    this.flushTimer = null;
    const events = this.mode.reverse ? [...this.batch].reverse() : this.batch;
    this.batch = [];
    this.inFlight += 1;
    try {
      for (const event of events) {
        const copies = this.mode.duplicate ? 2 : 1;
        const body = stringifyInMode(event, this.live());
        for (let copy = 0; copy < copies; copy += 1) await this.attempt({ event, body, attempt: 1 });
      }
    } finally {
      this.inFlight -= 1;
      this.wakeIfIdle();
    }
  }

  private async attempt(job: Job): Promise<void> {
    const config = this.config;
    if (config === null || this.abort.signal.aborted) return;
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
    };
    let signature: string | null = null;
    if (!this.mode.unsigned) {
      const secret = this.mode.wrongSecret ? `${config.secret}_not_the_endpoint_secret` : config.secret;
      signature = signatureHeader(job.body, secret, unixSeconds(this.nowMs()));
      headers['stripe-signature'] = signature;
    }
    const delivery: Delivery = {
      eventId: job.event.id,
      type: job.event.type,
      attempt: job.attempt,
      status: 0,
      signature,
      atMs: this.nowMs(),
      body: job.body,
    };
    try {
      const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(sandboxLimits.webhookTimeoutMs)]);
      const response = await fetch(config.url, { method: 'POST', headers, body: job.body, signal });
      delivery.status = response.status;
      await response.body?.cancel();
    } catch (error) {
      delivery.error = error instanceof Error ? error.message : String(error);
    }
    this.record(delivery);
    const delivered = delivery.status >= 200 && delivery.status < 300;
    if (!delivered && job.attempt < sandboxLimits.webhookAttemptsMax) this.retryLater(job);
  }

  private retryLater(job: Job): void {
    if (this.abort.signal.aborted) return;
    const backoffMs = sandboxLimits.webhookBackoffMsBase * 2 ** (job.attempt - 1);
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.inFlight += 1;
      void this.attempt({ ...job, attempt: job.attempt + 1 }).finally(() => {
        this.inFlight -= 1;
        this.wakeIfIdle();
      });
    }, backoffMs);
    this.retryTimers.add(timer);
  }

  private record(delivery: Delivery): void {
    this.log.push(delivery);
    if (this.log.length > sandboxLimits.deliveriesKeptMax) this.log.shift();
  }

  private isIdle(): boolean {
    return this.batch.length === 0 && this.flushTimer === null && this.retryTimers.size === 0 && this.inFlight === 0;
  }

  private wakeIfIdle(): void {
    if (!this.isIdle()) return;
    for (const wake of this.idleWaiters.splice(0)) wake();
  }
}
