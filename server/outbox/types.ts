import type { JsonObject } from '../../shared/json.ts';

// The outbox: every message Interlock sends to a person or an agent (a notification or a
// callback) is decided, journaled in a chain of its own under a deterministic id, and then
// delivered with retries by a worker that journals each attempt. These are the shapes the
// planner, the worker, the channels and the config share.

/** What a message is about. */
export const MESSAGE_EVENTS = ['escalated', 'moved_up', 'reminder', 'breach', 'digest', 'final', 'failed_at_stripe'] as const;
/** One message event. */
export type MessageEvent = (typeof MESSAGE_EVENTS)[number];

/** How a message travels. `callback` is an agent's own URL; the others reach people. */
export const CHANNEL_KINDS = ['email', 'slack', 'webhook', 'callback'] as const;
/** One channel kind. */
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

/**
 * One way to reach a person or a group, from `interlock.yaml`. Every secret (a Slack incoming
 * webhook URL is one; a webhook's signing secret) is resolved at start from the environment or a
 * secret file the config names, never written in the YAML itself.
 */
export type ChannelConfig =
  | { kind: 'email'; to: string }
  | { kind: 'slack'; url: string }
  | { kind: 'webhook'; url: string; secret: string };

/** An agent's callback: where its requests' final statuses are POSTed, signed with `secret`. */
export interface AgentCallbackConfig {
  url: string;
  secret: string;
}

/** Where email goes out. The password comes from the environment or a secret file. */
export interface SmtpConfig {
  host: string;
  port: number;
  /** TLS from the first byte (port 465); otherwise STARTTLS when the server offers it. */
  secure: boolean;
  user: string | null;
  password: string | null;
  /** The From header, e.g. `Interlock <interlock@example.com>`. */
  from: string;
}

/** Everything about reaching people and agents, from the config. */
export interface NotificationsConfig {
  /** The inbox's public address; item links are `${publicUrl}/items/${effect_id}`. Null: messages carry no link. */
  publicUrl: string | null;
  /** A reminder goes out at this share of an escalation's SLA (0 < share < 1); null for none. */
  reminderAtShare: number | null;
  smtp: SmtpConfig | null;
  /** By person name. */
  people: Record<string, ChannelConfig[]>;
  /** By group name: a team channel, told once per escalation to that group. */
  groups: Record<string, ChannelConfig[]>;
  /** By agent name. */
  agents: Record<string, AgentCallbackConfig>;
  /** Hosts or IP addresses a callback may reach although private, link-local or loopback (tests, an internal agent). */
  callbackAllowPrivate: string[];
}

/** Who a message is for: a person, a group's team channel, or an agent. */
export type Recipient = { kind: 'person'; name: string } | { kind: 'group'; name: string } | { kind: 'agent'; name: string };

/** One open item in a digest. */
export type DigestItem = {
  effect_id: string;
  request_id: string;
  amount: number;
  currency: string;
  why: string;
  due_ms: number | null;
  link: string | null;
};

/**
 * What a message says, decided when it is journaled, so every attempt (and every reader of the
 * journal) sees the same words. Agent-supplied text (`reason`, `request_id`) is kept as the agent
 * wrote it and escaped by each channel when it is rendered.
 */
export type MessageContent = {
  event: MessageEvent;
  /** The item; null for a digest, which lists `items`. */
  effect_id: string | null;
  request_id: string | null;
  agent: string | null;
  /** In the currency's smallest unit. */
  amount: number | null;
  currency: string | null;
  /** Why it needs a person (escalations), or the status in plain words (final). */
  why: string;
  /** The agent's reason, as the agent wrote it. */
  reason: string | null;
  group: string | null;
  level: number | null;
  /** The deadline on the application clock, ms; null when there is none. */
  due_ms: number | null;
  link: string | null;
  /** A digest's items. */
  items?: DigestItem[];
  /** A digest's held messages, by id: each is carried by exactly the digest that lists it. */
  covers?: string[];
  /** A callback's body: the same JSON as `GET /v1/refunds/:request_id` answered when it was decided. */
  body?: JsonObject;
};

/** One message to deliver: its id travels with it (`Interlock-Message-Id`) so a receiver can drop a repeat. */
export interface Delivery {
  id: string;
  recipient: Recipient;
  channel: ChannelConfig | ({ kind: 'callback' } & AgentCallbackConfig);
  content: MessageContent;
}

/** What one attempt came to. `retryable: false` gives up at once (a 4xx other than 408/429, a refused address). */
export type DeliveryOutcome = { ok: true; status: number | null; detail: string } | { ok: false; status: number | null; error: string; retryable: boolean };

/** Sends one message over its channel; it never throws: every failure is an outcome. */
export interface Channels {
  deliver(delivery: Delivery, signal: AbortSignal): Promise<DeliveryOutcome>;
}
