import { invalidRequest } from './errors.ts';
import { EXPAND_MODES, type ExpandMode } from './expand.ts';
import type { Read } from './params.ts';
import { RESTRICTED_KEY_PERMISSIONS, type RestrictedKeyPermission } from './permissions.ts';
import { RATE_LIMIT_MODES, type RateLimitMode } from './rate-limits.ts';

/**
 * When created refunds leave `pending`: right after their answer (`immediate`), when a test says
 * so (`manual`), or never, because they are created `succeeded` and the create answers so
 * (`at_create`), as Stripe test mode usually creates card refunds.
 */
export const SETTLE_MODES = ['immediate', 'manual', 'at_create'] as const;
export type SettleMode = (typeof SETTLE_MODES)[number];

/**
 * Which Stripe mode the sandbox answers as: `test` takes test keys (`sk_test_`, `rk_test_`) and
 * answers `livemode: false`; `live` takes live keys (`sk_live_`, `rk_live_`) and answers objects
 * and events with `livemode: true`, as Stripe answers a live key. No real money either way.
 */
export const KEY_MODES = ['test', 'live'] as const;
export type KeyMode = (typeof KEY_MODES)[number];

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
  /** `test` (default) or `live`: the keys taken and the `livemode` answered. */
  mode: KeyMode;
  /** What a restricted key (`rk_...`) may not do: each operation needing one of these answers 403 (none by default). */
  deniedPermissions: RestrictedKeyPermission[];
}

/** What a sandbox holds unless told otherwise: today's behaviour, no limits. */
export const DEFAULT_SETTINGS: SandboxSettings = { rateLimits: 'off', settle: 'immediate', expand: 'honour', mode: 'test', deniedPermissions: [] };

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
  const mode = readOne(body, 'mode', KEY_MODES);
  if (!mode.ok) return mode;
  const denied = readPermissions(body);
  if (!denied.ok) return denied;
  return {
    ok: true,
    value: {
      ...(rateLimits.value === undefined ? {} : { rateLimits: rateLimits.value }),
      ...(settle.value === undefined ? {} : { settle: settle.value }),
      ...(expand.value === undefined ? {} : { expand: expand.value }),
      ...(mode.value === undefined ? {} : { mode: mode.value }),
      ...(denied.value === undefined ? {} : { deniedPermissions: denied.value }),
    },
  };
}

/** `deniedPermissions`: a list of restricted-key permissions, each from the closed list. */
function readPermissions(body: Record<string, unknown>): Read<RestrictedKeyPermission[] | undefined> {
  const given = body['deniedPermissions'];
  if (given === undefined) return { ok: true, value: undefined };
  const known = Array.isArray(given) ? given.flatMap((item) => RESTRICTED_KEY_PERMISSIONS.filter((permission) => permission === item)) : [];
  if (!Array.isArray(given) || known.length !== given.length) {
    return refuse(`deniedPermissions must be a list of ${RESTRICTED_KEY_PERMISSIONS.join(', ')}.`, 'deniedPermissions');
  }
  return { ok: true, value: known };
}

const SETTING_NAMES = ['rateLimits', 'settle', 'expand', 'mode', 'deniedPermissions'] as const satisfies ReadonlyArray<keyof SandboxSettings>;

/** One setting's value from its closed list, or undefined when the body leaves it out. */
function readOne<T extends string>(body: Record<string, unknown>, name: keyof SandboxSettings, values: readonly T[]): Read<T | undefined> {
  if (body[name] === undefined) return { ok: true, value: undefined };
  const value = values.find((known) => known === body[name]);
  return value === undefined ? refuse(`${name} must be one of ${values.join(', ')}.`, name) : { ok: true, value };
}

function refuse<T>(message: string, param: string): Read<T> {
  return { ok: false, failure: invalidRequest(null, message, param) };
}
