import type { ConnectionOptions } from 'node:tls';
import { limits } from '../../shared/limits.ts';
import { assertNever } from '../../shared/statuses.ts';
import { type Resolve, resolveWithSystem } from './address-guard.ts';
import { createMailer, type Mailer } from './email.ts';
import { postJson } from './http-post.ts';
import { renderEmail, renderSlack, renderWebhook } from './render.ts';
import { MESSAGE_ID_HEADER, SIGNATURE_HEADER, signBody } from './signing.ts';
import type { Channels, Delivery, DeliveryOutcome, NotificationsConfig } from './types.ts';

/** How a channels instance is built; every option has a production default. */
export interface ChannelsOptions {
  /** Each attempt's own limit, on top of the caller's signal (default `limits.outboxAttemptTimeoutMs`, 10 s). */
  timeoutMs?: number;
  /** Host name to all its addresses, for the address guard (default: the system resolver). */
  resolve?: Resolve;
  /** `nowMs` words deadlines ("in 3h 20m") on the application clock; `wallMs` stamps signatures. Default: Date.now for both. */
  clock?: { nowMs(): number; wallMs(): number };
  /** TLS options for the SMTP connection, e.g. a test server's certificate. */
  smtpTls?: ConnectionOptions;
}

/** The channels, and `close` to end the SMTP pool's connections at shutdown. */
export interface ClosableChannels extends Channels {
  close(): void;
}

/** A message id goes into headers: it must be plain (the outbox's ids are 12 hex characters). */
const MESSAGE_ID = /^[A-Za-z0-9._-]{1,128}$/;

const SYSTEM_CLOCK = { nowMs: Date.now, wallMs: Date.now };

/**
 * Email over SMTP, Slack incoming webhooks, signed webhooks and signed agent callbacks, for the
 * outbox worker. `deliver` never throws: every failure is an outcome, final or worth a retry.
 */
export function createChannels(config: NotificationsConfig, options: ChannelsOptions = {}): ClosableChannels {
  const timeoutMs = options.timeoutMs ?? limits.outboxAttemptTimeoutMs;
  const resolve = options.resolve ?? resolveWithSystem;
  const clock = options.clock ?? SYSTEM_CLOCK;
  const mailer: Mailer | null = config.smtp === null ? null : createMailer(config.smtp, { timeoutMs, publicUrl: config.publicUrl, tls: options.smtpTls });
  const post = (url: string, body: string, headers: Record<string, string>, signal: AbortSignal) =>
    postJson(new URL(url), body, headers, { timeoutMs, allowPrivate: config.callbackAllowPrivate, resolve, signal });

  /** `Interlock-Signature` over exactly the bytes sent, stamped with the wall clock. */
  const signed = (id: string, body: string, secret: string): Record<string, string> => ({
    [MESSAGE_ID_HEADER]: id,
    [SIGNATURE_HEADER]: signBody(body, secret, Math.floor(clock.wallMs() / 1000)),
  });

  async function deliverOnce(delivery: Delivery, signal: AbortSignal): Promise<DeliveryOutcome> {
    const { id, channel, content } = delivery;
    if (!MESSAGE_ID.test(id)) return failure(`message id ${JSON.stringify(id.slice(0, 40))} cannot travel in a header`);
    switch (channel.kind) {
      case 'email': {
        if (mailer === null) return failure('email needs notifications.smtp, which is not configured');
        return mailer.send({ id, to: channel.to, ...renderEmail(content, clock.nowMs()) }, signal, timeoutMs);
      }
      case 'slack':
        return post(channel.url, JSON.stringify(renderSlack(content, clock.nowMs())), { [MESSAGE_ID_HEADER]: id }, signal);
      case 'webhook': {
        const body = JSON.stringify(renderWebhook(id, content));
        return post(channel.url, body, signed(id, body, channel.secret), signal);
      }
      case 'callback': {
        // The agent gets the same JSON it would read from GET /v1/refunds/:request_id, nothing wrapped around it.
        if (content.body === undefined) return failure('a callback message carries no body');
        const body = JSON.stringify(content.body);
        return post(channel.url, body, signed(id, body, channel.secret), signal);
      }
      default:
        return assertNever(channel);
    }
  }

  return {
    async deliver(delivery, signal) {
      try {
        return await deliverOnce(delivery, signal);
      } catch (error) {
        // Not expected: every known failure is already an outcome. Retrying costs little and a person can read why.
        return { ok: false, status: null, error: `unexpected: ${error instanceof Error ? error.message : String(error)}`, retryable: true };
      }
    },
    close() {
      mailer?.close();
    },
  };
}

/** A failure retrying cannot fix. */
function failure(error: string): DeliveryOutcome {
  return { ok: false, status: null, error, retryable: false };
}
