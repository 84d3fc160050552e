import type { Role } from '../../shared/api.ts';
import { WHY, type WhyCode } from '../../shared/statuses.ts';
import type { NotificationsConfig } from '../outbox/types.ts';

/** Kinds of policy rule; every rule must pass for a refund to clear with no person. */
export const RULE_KINDS = ['amount_at_most', 'no_flags', 'not_disputed', 'fits_remaining'] as const;
/** One rule kind. */
export type RuleKind = (typeof RULE_KINDS)[number];

/** Conditions a route's `when` may hold, by their file keys; every given one must hold. */
export const WHEN_KEYS = ['amount_over', 'amount_at_least', 'amount_at_most', 'flags_any', 'reason_in', 'rules_failed_any'] as const;

/**
 * Keys of thresholds that named no currency, and the key that replaced each: a file still using
 * one is refused at start with the line to write instead.
 */
export const THRESHOLD_KEYS_REPLACED = {
  amount_over_cents: 'amount_over',
  amount_at_least_cents: 'amount_at_least',
  amount_at_most_cents: 'amount_at_most',
} as const;

/**
 * A threshold in each currency it names, in that currency's smallest unit as Stripe counts it
 * (cents for USD, whole yen for JPY, thousandths of a dinar for KWD), keyed by Stripe's lowercase
 * code: `{usd: 5000, eur: 5000, jpy: 7000}`. An amount in a currency it does not name is never
 * compared with it.
 */
export type MinorUnitsByCurrency = Readonly<Record<string, number>>;

/** Reasons an item can be escalated for: what a route's `reason_in` may name. */
export const REASON_CODES: readonly WhyCode[] = Object.keys(WHY).filter(isWhyCode);

/** True when `code` is one of the reasons WHY has plain words for. */
function isWhyCode(code: string): code is WhyCode {
  return Object.hasOwn(WHY, code);
}

/**
 * Which Stripe the server talks to: the embedded local sandbox, real Stripe in test mode, or real
 * Stripe in live mode with real money, behind the production guards (server/config/live-guards.ts).
 */
export const STRIPE_MODES = ['sandbox', 'test', 'live'] as const;
/** One Stripe mode. */
export type StripeMode = (typeof STRIPE_MODES)[number];

/**
 * How Interlock reaches Stripe, and how much of the account's rate limits it uses: `share` of
 * Stripe's published limits for the mode (25 operations a second and 25 per endpoint in test mode
 * and the sandbox, 100 and 25 live), or of the limits given here for an account Stripe raised.
 */
export interface StripeConfig {
  mode: StripeMode;
  rateLimits: { share: number; globalPerSecond: number | null; endpointPerSecond: number | null };
}

/** A refund must be at most `amount` in its payment's currency; in a currency `amount` does not name, it fails. */
export interface AmountAtMostRule {
  kind: 'amount_at_most';
  name: string;
  amount: MinorUnitsByCurrency;
}

/** The request carries none of `flags`; those flags always need a person. */
export interface NoFlagsRule {
  kind: 'no_flags';
  name: string;
  flags: string[];
}

/** The charge behind the payment is not disputed. */
export interface NotDisputedRule {
  kind: 'not_disputed';
  name: string;
}

/** The amount fits what is left of the payment after refunds by others. */
export interface FitsRemainingRule {
  kind: 'fits_remaining';
  name: string;
}

/**
 * One policy rule. Its name is what routes (`rules_failed_any`) and the policy lease name it by;
 * what a person reads when it fails is worded from its kind (server/config/rules.ts).
 */
export type RuleConfig = AmountAtMostRule | NoFlagsRule | NotDisputedRule | FitsRemainingRule;

/**
 * When a route applies. Every condition given must hold; an absent one is not checked. An amount
 * in a currency a threshold does not name counts as over it: it is unknown money, and goes the way
 * large amounts go (`amountOver` and `amountAtLeast` hold, `amountAtMost` does not).
 */
export interface RouteWhen {
  amountOver?: MinorUnitsByCurrency;
  amountAtLeast?: MinorUnitsByCurrency;
  amountAtMost?: MinorUnitsByCurrency;
  flagsAny?: string[];
  reasonIn?: WhyCode[];
  rulesFailedAny?: string[];
}

/** Where an escalation goes: `chain[0]` first, the next group after `slaMs` unanswered. */
export interface RouteConfig {
  name: string;
  /** Null matches everything; only the last route may (and must) be such a catch-all. */
  when: RouteWhen | null;
  chain: string[];
  slaMs: number | null;
  /** From this amount upwards, per currency, two distinct people must approve; null for one always. */
  twoApproversFrom: MinorUnitsByCurrency | null;
}

/** Someone who logs in to the inbox. */
export interface PersonConfig {
  name: string;
  displayName: string;
  role: Role;
  /** `scrypt$N$r$p$salt$hash`, never the password itself. */
  passwordHash: string;
  /** Their own email address: they may not approve a refund of a payment whose customer has it. */
  email: string | null;
}

/** An agent that asks for refunds with a bearer token. */
export interface AgentConfig {
  name: string;
  /** Lowercase hex SHA-256 of the bearer token, never the token itself. */
  tokenSha256: string;
}

/**
 * A place a copy of every checkpoint goes: a file appended to, or a URL each one is PUT to. A file
 * mirror `shared` is one every server of a database sees (an NFS or similar mount).
 */
export type MirrorConfig = { kind: 'file'; path: string; shared?: true } | { kind: 'url'; url: string; token: string | null };

export interface IntegrityConfig {
  /** A checkpoint is signed once this many entries were appended since the last one... */
  checkpointEveryEntries: number;
  /** ...or this long after the last one, if the journal grew at all. */
  checkpointEveryMs: number;
  mirrors: MirrorConfig[];
  /** `GET /.well-known/interlock-checkpoint` answers anyone; else it needs a token. */
  checkpointPublic: boolean;
  /** The SHA-256 of a token that may read the latest checkpoint, besides the agents' tokens. */
  checkpointTokenSha256: string | null;
  /** How often the entries since the last checkpoint are verified again. */
  tailVerifyMs: number;
  /** How long after one background pass over the whole journal ended the next starts; null: no pass. */
  wholePassMs: number | null;
}

/** A request rate: `burst` requests at once after a quiet spell, `perSecond` sustained. */
export interface RateRuleConfig {
  burst: number;
  perSecond: number;
}

/** How the server meets the network (server/config/network.ts). */
export interface NetworkConfig {
  /**
   * Whose word on the client's address is believed (Fastify's trustProxy): false, the connection's
   * own address; a number, that many proxies in front, each adding to X-Forwarded-For; a list,
   * proxies at these addresses or ranges.
   */
  trustProxy: false | number | string[];
  /** Host names served besides the loopback names, the listening address and public_url's host. */
  allowedHosts: string[];
}

/** Who may scrape `GET /metrics` (server/config/metrics.ts): an allowed address, or a bearer token. */
export interface MetricsConfig {
  /** Addresses, CIDR ranges or named ranges (`loopback`) scraped from without a token; by default loopback only. */
  allowFrom: string[];
  /** SHA-256 (hex) of a bearer token that may scrape from any address; null for none. */
  tokenSha256: string | null;
}

/** Login throttling and agents' request rates on /v1 (server/throttle/). */
export interface ThrottleConfig {
  /** Requests one agent token may send to /v1. */
  agentToken: RateRuleConfig;
  /** Requests one address (an IPv6 /64) may send to /v1, whatever token they carry. */
  agentAddress: RateRuleConfig;
  /** Failed logins an hour, per name, past which browsers without a device cookie for it wait. */
  loginFailuresPerHour: number;
  /** Failed logins an hour, per address (an IPv6 /64) under any names, past which browsers without a device cookie for the name tried wait. */
  loginAddressFailuresPerHour: number;
}

/** The loaded configuration: camelCase, durations in ms, money in minor units by currency. */
export interface InterlockConfig {
  inboxName: string;
  /** How long a person's approval stays good; null for no expiry. */
  approvalMaxAgeMs: number | null;
  /** How often the SLA ticker runs. */
  slaTickMs: number;
  rules: RuleConfig[];
  /** First match wins; the last one always matches. */
  routes: RouteConfig[];
  /** Group name → member names, every one an approver in `people`. */
  groups: Record<string, string[]>;
  people: PersonConfig[];
  agents: AgentConfig[];
  stripe: StripeConfig;
  sessions: { idleMs: number; absoluteMs: number };
  /** Reaching people and agents: the inbox's public URL, SMTP, channels, callbacks (server/config/notifications.ts). */
  notifications: NotificationsConfig;
  /** Quick reasons for a rejection, one click away in the inbox. */
  rejectReasons: string[];
  /** Checkpoints of the journal, their mirrors and who reads them (server/config/integrity.ts). */
  integrity: IntegrityConfig;
  /** Proxies believed and Host names served (server/config/network.ts). */
  network: NetworkConfig;
  /** Login throttling and agents' request rates on /v1. */
  throttle: ThrottleConfig;
  /** Who may scrape `GET /metrics`. */
  metrics: MetricsConfig;
  /** Enables the clock-moving endpoint; never in production. */
  testMode: boolean;
}

/** Values used when the file leaves an optional key out. */
export const CONFIG_DEFAULTS = {
  inboxName: 'inbox',
  slaTickSeconds: 5,
  sessionIdleMinutes: 30,
  sessionAbsoluteMinutes: 720,
  testMode: false,
  /** Interlock uses 80% of Stripe's rate limits, leaving the rest to the Dashboard and other integrations. */
  stripeBudgetShare: 0.8,
  /**
   * One agent token on /v1: a burst of twice the largest the bench sends (1,000 agents at once,
   * all on one token, each asking again once a second while it waits), and twice the 2,000
   * refunds a second one server is meant to carry, so a lone agent is never held below the
   * server's own pace; what it stops is a client looping without pause.
   */
  agentTokenRate: { burst: 2_000, perSecond: 4_000 },
  /** One address on /v1, whatever token (or none) it sends: the same, since the bench's agents share one address. */
  agentAddressRate: { burst: 2_000, perSecond: 4_000 },
  /**
   * Failed logins an hour per name before browsers without a device cookie for it wait: about
   * two a minute from everywhere together, far above a person's own mistakes, far below guessing.
   */
  loginFailuresPerHour: 100,
  /**
   * Failed logins an hour from one address, under any names, before browsers without a device
   * cookie for the name they try wait: each first try of a new name costs a full scrypt, so this
   * bounds the hashing one address can ask for (1,000 hashes of 50 to 130 ms at the default cost:
   * at most about two core-minutes an hour), far above what an office of a hundred behind one NAT
   * mistypes in an hour.
   */
  loginAddressFailuresPerHour: 1_000,
} as const;

/** Bounds on the file itself, each with why. */
export const configLimits = {
  /** A routing file is a few kilobytes; anything near this is a mistake, not a config. */
  fileBytesMax: 1024 * 1024,
  /** YAML aliases can expand exponentially; a hand-written config needs few if any. */
  aliasCountMax: 100,
  /** People, agents, groups, rules and routes: each list is written by hand. */
  entriesMax: 1000,
  /** Names of people, agents, groups and routes: short, URL- and log-safe. */
  namePattern: /^[a-z0-9._-]{1,64}$/,
  /** Rule names and display names are shown to people, so they stay readable. */
  labelCharsMax: 200,
  /** A year: no approval window, SLA or session should be longer. */
  minutesMax: 366 * 24 * 60,
  /** The SLA ticker runs at least once an hour, so a breach is never noticed much later. */
  tickSecondsMax: 3600,
  /** URLs Interlock sends to or links to; the same bound agents' context URLs have. */
  urlCharsMax: 2000,
  /** The longest address SMTP carries (RFC 5321's path limit less its brackets). */
  emailCharsMax: 254,
  /** HMAC secrets for webhooks and callbacks: a short one can be guessed offline from one signed message. */
  signingSecretCharsMin: 16,
  /** A secret file holds one password, URL or key; a path to anything larger is a mistake. */
  secretFileBytesMax: 64 * 1024,
  /** Stripe raises an account's limits on request, to a few thousand operations a second at most. */
  stripeOpsPerSecondMax: 10_000,
  /** Proxies in front of one server: a TLS proxy, a balancer, a CDN; more is a misreading of the setting. */
  proxyHopsMax: 10,
  /** An agent rate beyond this is no limit at all: one server answers a few thousand requests a second. */
  requestsPerSecondMax: 1_000_000,
  /** A per-name ceiling beyond this is no ceiling: it is a guess every few ms. */
  loginFailuresPerHourMax: 1_000_000,
} as const;
