import type { ConnectionOptions } from 'node:tls';
import nodemailer from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import type { RenderedEmail } from './render.ts';
import { MESSAGE_ID_HEADER } from './signing.ts';
import type { DeliveryOutcome, SmtpConfig } from './types.ts';

// Email over SMTP through one pooled nodemailer transport per config. An attempt that times out
// may still be sent by the pool afterwards, so a retry can deliver the same email twice: both
// carry the same Message-ID and Interlock-Message-Id, which lets mail clients and filters see one.

/** Connections the pool keeps open: messages to people are few, and each is small. */
const SMTP_CONNECTIONS_MAX = 2;

/** One email to send. */
export interface Email extends RenderedEmail {
  id: string;
  to: string;
}

/** Sends emails over one pooled SMTP transport; `close` ends its connections. */
export interface Mailer {
  send(email: Email, signal: AbortSignal, timeoutMs: number): Promise<DeliveryOutcome>;
  close(): void;
}

/** RFC 3834: a program sent this email, so auto-responders (out-of-office replies) leave it unanswered. */
const AUTO_SUBMITTED = { 'Auto-Submitted': 'auto-generated' } as const;

/** The Message-ID an email with this outbox id carries, under the domain of `messageIdDomain`. */
export function emailMessageId(id: string, domain: string): string {
  return `<${id}@${domain}>`;
}

/**
 * The domain Interlock's Message-IDs are made under: the host people reach the inbox at
 * (`public_url`), else the domain of the From address, else `localhost`.
 */
export function messageIdDomain(publicUrl: string | null, from: string): string {
  if (publicUrl !== null && URL.canParse(publicUrl)) return new URL(publicUrl).hostname;
  return /@([A-Za-z0-9.-]+)>?\s*$/.exec(from)?.[1] ?? 'localhost';
}

/** What nodemailer's error says: the SMTP reply code when the server gave one. */
function outcomeOfError(host: string, error: unknown): DeliveryOutcome {
  const code = error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : null;
  const responseCode = error instanceof Error && 'responseCode' in error && typeof error.responseCode === 'number' ? error.responseCode : null;
  const message = error instanceof Error ? error.message : String(error);
  // 5xx replies are permanent (a refused recipient, failed authentication); 4xx and no reply at all (a network error) are not.
  const retryable = responseCode === null || responseCode < 500;
  return { ok: false, status: responseCode, error: `smtp ${host}: ${[code, message].filter(Boolean).join(' ')}`.slice(0, 300), retryable };
}

/** A transport for `smtp`; `tls` adds TLS options (a test server's certificate); Message-IDs are made under `publicUrl`'s host. */
export function createMailer(smtp: SmtpConfig, options: { timeoutMs: number; publicUrl: string | null; tls?: ConnectionOptions }): Mailer {
  const domain = messageIdDomain(options.publicUrl, smtp.from);
  const transportOptions: SMTPPool.Options = {
    pool: true,
    maxConnections: SMTP_CONNECTIONS_MAX,
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    auth: smtp.user === null || smtp.password === null ? undefined : { user: smtp.user, pass: smtp.password },
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
    tls: options.tls,
    disableFileAccess: true,
    disableUrlAccess: true,
  };
  const transport = nodemailer.createTransport(transportOptions);
  return {
    async send(email, signal, timeoutMs) {
      const controller = new AbortController();
      const stop = () => controller.abort();
      const timer = setTimeout(stop, timeoutMs);
      signal.addEventListener('abort', stop, { once: true });
      if (signal.aborted) stop();
      const stopped = new Promise<'stopped'>((resolve) => controller.signal.addEventListener('abort', () => resolve('stopped'), { once: true }));
      try {
        const sent = transport.sendMail({
          from: smtp.from,
          to: email.to,
          subject: email.subject,
          text: email.text,
          html: email.html,
          messageId: emailMessageId(email.id, domain),
          headers: { [MESSAGE_ID_HEADER]: email.id, ...AUTO_SUBMITTED },
        });
        sent.catch(() => {});
        const result = await Promise.race([sent, stopped]);
        if (result === 'stopped') return { ok: false, status: null, error: `smtp ${smtp.host}: no answer in time (${timeoutMs} ms)`, retryable: true };
        const status = Number.parseInt(result.response, 10);
        return { ok: true, status: Number.isSafeInteger(status) ? status : null, detail: `accepted by ${smtp.host}: ${result.response}`.slice(0, 300) };
      } catch (error) {
        return outcomeOfError(smtp.host, error);
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', stop);
      }
    },
    close() {
      transport.close();
    },
  };
}
