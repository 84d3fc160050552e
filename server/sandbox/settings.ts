import { invalidRequest } from './errors.ts';
import { EXPAND_MODES, type ExpandMode } from './expand.ts';
import type { Read } from './params.ts';
import { RATE_LIMIT_MODES, type RateLimitMode } from './rate-limits.ts';

/**
 * When created refunds leave `pending`: right after their answer (`immediate`), when a test says
 * so (`manual`), or never, because they are created `succeeded` and the create answers so
 * (`at_create`), as Stripe test mode usually creates card refunds.
 */
export const SETTLE_MODES = ['immediate', 'manual', 'at_create'] as const;
export type SettleMode = (typeof SETTLE_MODES)[number];

/**
 * How the sandbox behaves where Stripe accounts differ or tests need a choice; each is set when
 * it starts (`startSandbox` options, `server/sandbox/main.ts` variables) and can change at run
 * time (`configure`, `POST /_sandbox/settings`).
 */
export interface SandboxSettings {
  /** Which of Stripe's published rate limits hold (`off` by default). */
  rateLimits: RateLimitMode;
  /** When created refunds leave `pending` (`immediate` by default). */
  settle: SettleMode;
  /** `honour` (default): `expand[]` as Stripe honours it; `ignore`: every field an id, as a Stripe that ignored it would answer. */
  expand: ExpandMode;
}

/** What a sandbox holds unless told otherwise: today's behaviour, no limits. */
export const DEFAULT_SETTINGS: SandboxSettings = { rateLimits: 'off', settle: 'immediate', expand: 'honour' };

/** The settings a control route or a test asks for, each checked against its closed list; absent ones stay as they are. */
export function readSettings(body: Record<string, unknown>): Read<Partial<SandboxSettings>> {
  const unknown = Object.keys(body).find((name) => !SETTING_NAMES.some((setting) => setting === name));
  if (unknown !== undefined) return refuse(`Unknown setting ${unknown}; the settings are ${SETTING_NAMES.join(', ')}.`, unknown);
  const rateLimits = readOne(body, 'rateLimits', RATE_LIMIT_MODES);
  if (!rateLimits.ok) return rateLimits;
  const settle = readOne(body, 'settle', SETTLE_MODES);
  if (!settle.ok) return settle;
  const expand = readOne(body, 'expand', EXPAND_MODES);
  if (!expand.ok) return expand;
  return {
    ok: true,
    value: {
      ...(rateLimits.value === undefined ? {} : { rateLimits: rateLimits.value }),
      ...(settle.value === undefined ? {} : { settle: settle.value }),
      ...(expand.value === undefined ? {} : { expand: expand.value }),
    },
  };
}

const SETTING_NAMES = ['rateLimits', 'settle', 'expand'] as const satisfies ReadonlyArray<keyof SandboxSettings>;

/** One setting's value from its closed list, or undefined when the body leaves it out. */
function readOne<T extends string>(body: Record<string, unknown>, name: keyof SandboxSettings, values: readonly T[]): Read<T | undefined> {
  if (body[name] === undefined) return { ok: true, value: undefined };
  const value = values.find((known) => known === body[name]);
  return value === undefined ? refuse(`${name} must be one of ${values.join(', ')}.`, name) : { ok: true, value };
}

function refuse<T>(message: string, param: string): Read<T> {
  return { ok: false, failure: invalidRequest(null, message, param) };
}
