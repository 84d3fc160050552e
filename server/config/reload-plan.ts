import type { Membership } from '../../shared/entries.ts';
import { jsonEqual, plain } from '../../shared/json.ts';
import type { NotificationsConfig } from '../outbox/types.ts';
import type { InterlockConfig } from './schema.ts';

/**
 * What a reload may change: who works here, how items are decided and routed, and who may scrape
 * the metrics. Everything else
 * is wired into the running process once (the journal under the inbox's name, Stripe and its
 * budget, sessions, the network, throttles, checkpoints, the SMTP pool) and changes only with a
 * restart, so a file that changes any of it is refused whole and the config in force stays.
 */
export const RELOADABLE_KEYS = ['approvalMaxAgeMs', 'rules', 'routes', 'groups', 'people', 'agents', 'rejectReasons', 'metrics'] as const;

/** Settings fixed at start, each with the key the file spells it with. */
export const RESTART_ONLY: ReadonlyArray<readonly [Exclude<keyof InterlockConfig, (typeof RELOADABLE_KEYS)[number] | 'notifications'>, string]> = [
  ['inboxName', 'inbox_name'],
  ['slaTickMs', 'sla_tick_seconds'],
  ['stripe', 'stripe'],
  ['sessions', 'sessions'],
  ['integrity', 'integrity'],
  ['network', 'trust_proxy or allowed_hosts'],
  ['throttle', 'throttle'],
  ['testMode', 'test_mode'],
];

/** Who is told on which channel follows the people, groups and agents; the rest of `notifications` is fixed at start. */
export const RESTART_ONLY_NOTIFICATIONS: ReadonlyArray<readonly [keyof NotificationsConfig, string]> = [
  ['publicUrl', 'public_url'],
  ['reminderAtShare', 'notifications.reminder_at_share'],
  ['smtp', 'notifications.smtp'],
  ['callbackAllowPrivate', 'notifications.callback_allow_private'],
];

/** What a reload changes, by name: the journal's CONFIG entry and the operator's answer are made from it. */
export interface ConfigChanges {
  peopleAdded: string[];
  peopleRemoved: string[];
  /** People kept whose role or password changed: their sessions end, so they sign in again as they are now. */
  peopleChanged: string[];
  joined: Membership[];
  left: Membership[];
  agentsAdded: string[];
  agentsRemoved: string[];
  /** Routes added, removed or changed, by name: open items keep the chain and SLA they were routed with. */
  routesChanged: string[];
  rulesChanged: boolean;
  /** Anything else reloadable (approval window, quick reasons, channels of people and groups). */
  otherChanged: string[];
}

/** A reload decided: refused with why (the config in force stays), or the changes it makes. */
export type ReloadPlan = { kind: 'refused'; why: string } | { kind: 'apply'; changes: ConfigChanges };

/** Decide a reload from the config in force and the new one, both already loaded and validated. */
export function planReload(now: InterlockConfig, next: InterlockConfig): ReloadPlan {
  const fixed = [
    ...RESTART_ONLY.filter(([key]) => !jsonEqual(plain(now[key]), plain(next[key]))),
    ...RESTART_ONLY_NOTIFICATIONS.filter(([key]) => !jsonEqual(plain(now.notifications[key]), plain(next.notifications[key]))),
  ].map(([, spelled]) => spelled);
  if (fixed.length > 0) return { kind: 'refused', why: `${fixed.join(', ')} change only with a restart; nothing was changed` };
  const renamed = renamedAgents(now, next);
  if (renamed.length > 0) {
    const [from, to] = renamed[0]!;
    return {
      kind: 'refused',
      why: `agent ${from} renamed ${to} with the same token: an agent's name is part of its requests' ids, so a retry of an earlier request_id after the rename would be a new request (and could refund again); keep the name, or add the new name with a new token; nothing was changed`,
    };
  }
  return { kind: 'apply', changes: changesOf(now, next) };
}

/**
 * Agents whose name changed while their token stayed: the same client, whose retries of
 * request_ids it used before would be new requests (the effect id is made from the agent's name
 * and the request_id). As [old name, new name].
 */
function renamedAgents(now: InterlockConfig, next: InterlockConfig): Array<[string, string]> {
  const kept = new Set(next.agents.map((a) => a.name));
  const renamed: Array<[string, string]> = [];
  for (const old of now.agents) {
    const successor = next.agents.find((a) => a.tokenSha256 === old.tokenSha256);
    if (!kept.has(old.name) && successor !== undefined) renamed.push([old.name, successor.name]);
  }
  return renamed;
}

function changesOf(now: InterlockConfig, next: InterlockConfig): ConfigChanges {
  const names = (config: InterlockConfig) => config.people.map((p) => p.name);
  const kept = now.people.filter((p) => next.people.some((q) => q.name === p.name));
  const memberships = (config: InterlockConfig) => Object.entries(config.groups).flatMap(([group, members]) => members.map((name) => ({ group, name })));
  const routes = new Set([...now.routes, ...next.routes].map((r) => r.name));
  const other: string[] = [];
  if (now.approvalMaxAgeMs !== next.approvalMaxAgeMs) other.push('approval_max_age_minutes');
  if (!jsonEqual(now.rejectReasons, next.rejectReasons)) other.push('reject_reasons');
  if (!jsonEqual(plain(now.notifications), plain(next.notifications))) other.push('notifications');
  if (kept.some((p) => next.people.some((q) => q.name === p.name && q.displayName !== p.displayName))) other.push('display names');
  return {
    peopleAdded: without(names(next), names(now)),
    peopleRemoved: without(names(now), names(next)),
    peopleChanged: kept
      .filter((p) => next.people.some((q) => q.name === p.name && (q.role !== p.role || q.passwordHash !== p.passwordHash)))
      .map((p) => p.name),
    joined: membershipsWithout(memberships(next), memberships(now)),
    left: membershipsWithout(memberships(now), memberships(next)),
    agentsAdded: without(next.agents.map((a) => a.name), now.agents.map((a) => a.name)),
    agentsRemoved: without(now.agents.map((a) => a.name), next.agents.map((a) => a.name)),
    routesChanged: [...routes].filter((name) => !jsonEqual(plain(now.routes.find((r) => r.name === name)), plain(next.routes.find((r) => r.name === name)))),
    rulesChanged: !jsonEqual(plain(now.rules), plain(next.rules)),
    otherChanged: other,
  };
}

/**
 * The people whose sessions a reload ends: removed, out of a group, or with another role or
 * password. Their pages were shown (and their live feeds joined) as they were; they sign in again.
 */
export function sessionsToEnd(changes: ConfigChanges): Set<string> {
  return new Set([...changes.peopleRemoved, ...changes.peopleChanged, ...changes.left.map((m) => m.name)]);
}

/** Nothing a reader could notice changed (the file was saved again, or only its comments moved). */
export function changedNothing(changes: ConfigChanges): boolean {
  const { rulesChanged, ...lists } = changes;
  return !rulesChanged && Object.values(lists).every((list) => list.length === 0);
}

/** What the reload changed, in the operator's words: one line per kind of change. */
export function describeChanges(changes: ConfigChanges): string[] {
  if (changedNothing(changes)) return ['nothing changed'];
  const member = (m: Membership) => `${m.name} in ${m.group}`;
  const lines: Array<[string, readonly string[]]> = [
    ['people added', changes.peopleAdded],
    ['people removed', changes.peopleRemoved],
    ['people with another role or password', changes.peopleChanged],
    ['joined', changes.joined.map(member)],
    ['left', changes.left.map(member)],
    ['agents added', changes.agentsAdded],
    ['agents removed', changes.agentsRemoved],
    ['routes changed', changes.routesChanged],
    ['also changed', [...(changes.rulesChanged ? ['rules'] : []), ...changes.otherChanged]],
  ];
  return lines.filter(([, list]) => list.length > 0).map(([label, list]) => `${label}: ${list.join(', ')}`);
}

function without(list: readonly string[], removed: readonly string[]): string[] {
  return list.filter((item) => !removed.includes(item)).sort();
}

function membershipsWithout(list: readonly Membership[], removed: readonly Membership[]): Membership[] {
  return list
    .filter((m) => !removed.some((r) => r.group === m.group && r.name === m.name))
    .sort((a, b) => a.group.localeCompare(b.group) || a.name.localeCompare(b.name));
}
