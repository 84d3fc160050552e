import { describe, expect, it } from 'vitest';
import {
  type ConfigChanges,
  describeChanges,
  planReload,
  RELOADABLE_KEYS,
  RESTART_ONLY,
  RESTART_ONLY_NOTIFICATIONS,
  sessionsToEnd,
} from '../../server/config/reload-plan.ts';
import type { InterlockConfig } from '../../server/config/schema.ts';
import { testConfig } from '../support/app-world.ts';

// What a reload may change, as a table: the config in force, one change to it, and what the
// reload decides (refused with why, or the changes it names).

const NOW = testConfig();
const NOTHING: ConfigChanges = {
  peopleAdded: [],
  peopleRemoved: [],
  peopleChanged: [],
  joined: [],
  left: [],
  agentsAdded: [],
  agentsRemoved: [],
  routesChanged: [],
  rulesChanged: false,
  otherChanged: [],
};

const without = (name: string): Pick<InterlockConfig, 'people' | 'groups'> => ({
  people: NOW.people.filter((p) => p.name !== name),
  groups: Object.fromEntries(Object.entries(NOW.groups).map(([group, members]) => [group, members.filter((m) => m !== name)])),
});
const ana = NOW.people.find((p) => p.name === 'ana')!;

const TABLE: Array<[string, Partial<InterlockConfig>, ReturnType<typeof planReload>]> = [
  ['the same config', {}, { kind: 'apply', changes: NOTHING }],
  ['a person removed', without('bea'), { kind: 'apply', changes: { ...NOTHING, peopleRemoved: ['bea'], left: [{ group: 'ap-leads', name: 'bea' }] } }],
  [
    'a person added to people and a group',
    { people: [...NOW.people, { ...ana, name: 'dee', displayName: 'Dee' }], groups: { ...NOW.groups, risk: ['rita', 'dee'] } },
    { kind: 'apply', changes: { ...NOTHING, peopleAdded: ['dee'], joined: [{ group: 'risk', name: 'dee' }] } },
  ],
  ['a person out of one group', { groups: { ...NOW.groups, 'ap-leads': ['bea'] } }, { kind: 'apply', changes: { ...NOTHING, left: [{ group: 'ap-leads', name: 'ana' }] } }],
  [
    'a new password',
    { people: NOW.people.map((p) => (p.name === 'ana' ? { ...p, passwordHash: `${p.passwordHash.slice(0, -4)}AAA=` } : p)) },
    { kind: 'apply', changes: { ...NOTHING, peopleChanged: ['ana'] } },
  ],
  ['a display name', { people: NOW.people.map((p) => (p.name === 'ana' ? { ...p, displayName: 'Ana L.' } : p)) }, { kind: 'apply', changes: { ...NOTHING, otherChanged: ['display names'] } }],
  ['an agent removed', { agents: [] }, { kind: 'apply', changes: { ...NOTHING, agentsRemoved: ['support-bot'] } }],
  [
    'an agent renamed, its token kept',
    { agents: NOW.agents.map((a) => ({ ...a, name: 'refund-bot' })) },
    {
      kind: 'refused',
      why: "agent support-bot renamed refund-bot with the same token: an agent's name is part of its requests' ids, so a retry of an earlier request_id after the rename would be a new request (and could refund again); keep the name, or add the new name with a new token; nothing was changed",
    },
  ],
  [
    'an agent replaced by another with a token of its own',
    { agents: NOW.agents.map((a) => ({ ...a, name: 'refund-bot', tokenSha256: 'f'.repeat(64) })) },
    { kind: 'apply', changes: { ...NOTHING, agentsAdded: ['refund-bot'], agentsRemoved: ['support-bot'] } },
  ],
  ['a route SLA', { routes: NOW.routes.map((r) => (r.name === 'default' ? { ...r, slaMs: 60_000 } : r)) }, { kind: 'apply', changes: { ...NOTHING, routesChanged: ['default'] } }],
  ['a route removed', { routes: NOW.routes.filter((r) => r.name !== 'large') }, { kind: 'apply', changes: { ...NOTHING, routesChanged: ['large'] } }],
  ['the rules', { rules: NOW.rules.slice(1) }, { kind: 'apply', changes: { ...NOTHING, rulesChanged: true } }],
  ['the approval window', { approvalMaxAgeMs: null }, { kind: 'apply', changes: { ...NOTHING, otherChanged: ['approval_max_age_minutes'] } }],
  ['Stripe', { stripe: { ...NOW.stripe, mode: 'test' } }, { kind: 'refused', why: 'stripe change only with a restart; nothing was changed' }],
  ['the inbox name', { inboxName: 'other' }, { kind: 'refused', why: 'inbox_name change only with a restart; nothing was changed' }],
  ['sessions and throttles', { sessions: { idleMs: 1, absoluteMs: 2 }, throttle: { ...NOW.throttle, loginFailuresPerHour: 1 } }, { kind: 'refused', why: 'sessions, throttle change only with a restart; nothing was changed' }],
  ['the public URL', { notifications: { ...NOW.notifications, publicUrl: 'https://x.example' } }, { kind: 'refused', why: 'public_url change only with a restart; nothing was changed' }],
  [
    'who is told on which channel',
    { notifications: { ...NOW.notifications, people: { ana: [{ kind: 'email', to: 'ana@example.com' }] } } },
    { kind: 'apply', changes: { ...NOTHING, otherChanged: ['notifications'] } },
  ],
];

describe('planReload', () => {
  it.each(TABLE)('%s', (_what, change, expected) => {
    expect(planReload(NOW, { ...NOW, ...change })).toEqual(expected);
  });

  it('every key of the config is either reloadable or fixed at start', () => {
    const named = [...RELOADABLE_KEYS, ...RESTART_ONLY.map(([key]) => key), 'notifications'].sort();
    expect(named).toEqual(Object.keys(NOW).sort());
    const notifications = [...RESTART_ONLY_NOTIFICATIONS.map(([key]) => key), 'people', 'groups', 'agents'].sort();
    expect(notifications).toEqual(Object.keys(NOW.notifications).sort());
  });

  it('the sessions that end are of people removed, out of a group, or with another role or password', () => {
    const changes = { ...NOTHING, peopleRemoved: ['bea'], peopleChanged: ['cy'], left: [{ group: 'risk', name: 'rita' }], joined: [{ group: 'risk', name: 'fm' }] };
    expect([...sessionsToEnd(changes)].sort()).toEqual(['bea', 'cy', 'rita']);
    expect(describeChanges(changes)).toEqual(['people removed: bea', 'people with another role or password: cy', 'joined: fm in risk', 'left: rita in risk']);
    expect(describeChanges(NOTHING)).toEqual(['nothing changed']);
  });
});
