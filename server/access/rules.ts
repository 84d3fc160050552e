// Who may read or decide what: the one place it is decided. Pure: each answer is a function of the
// person (name, role), the config's groups as they are now, the thing asked about and the verb.
// Routes, the live feed and presence ask here and build no bound of their own; the groups are an
// argument of every call, never kept, so a config read again applies at the next question.
import type { Role } from '../../shared/api.ts';
import { assertNever } from '../../shared/statuses.ts';

/** What a person may be allowed to read or act on. */
export const RESOURCES = [
  'item',
  'decision',
  'ledger_row',
  'receipt',
  'scoreboard_breakdown',
  'reconciliation',
  'live_feed',
  'payment_panel',
  'export',
  'directory',
] as const;
/** One resource of `RESOURCES`. */
export type Resource = (typeof RESOURCES)[number];

/** The verbs each resource is asked with. */
export const VERBS = {
  /** list: the inbox and history; read: one item's page. */
  item: ['list', 'read'],
  /** make: approve, reject, repair or close an escalation. */
  decision: ['make'],
  /** list: the ledger's pages and totals; read: one row. */
  ledger_row: ['list', 'read'],
  /** read: a request's signed receipt, from its item or its ledger row. */
  receipt: ['read'],
  /** read: the scoreboard, its series, or one group's figures. */
  scoreboard_breakdown: ['read'],
  /** read: the runs kept; start: a new run. */
  reconciliation: ['read', 'start'],
  /** join: hear items change; presence: be shown viewing an item, and hear who views one. */
  live_feed: ['join', 'presence'],
  /** read: the payment as Stripe has it, naming the other requests on it. */
  payment_panel: ['read'],
  /** download: the ledger's and the scoreboard's CSV. */
  export: ['download'],
  /** list: the people, by display name and role (never their groups). */
  directory: ['list'],
} as const satisfies Record<Resource, readonly string[]>;

/** A verb of one resource. */
export type Verb<R extends Resource> = (typeof VERBS)[R][number];

/** One question: a resource and one of its verbs. */
export type Ask = { [R in Resource]: { resource: R; verb: Verb<R> } }[Resource];

/**
 * How far an answer reaches: `every` request (or the whole of the resource), those ever routed to
 * one of the person's own groups (`own_groups`), or `none`.
 */
export const REACHES = ['every', 'own_groups', 'none'] as const;
export type Reach = (typeof REACHES)[number];

/** What the rules read of a person. */
export interface Person {
  name: string;
  role: Role;
}

/** The config's groups: each group's members by name. */
export type Groups = Readonly<Record<string, readonly string[]>>;

/**
 * Who may do what, by role. Finance reads everything and decides nothing ("finance sees the inbox,
 * the history and the scoreboard but decides nothing"); an approver reads and decides within their
 * own groups, and never reconciles (a run compares every group's refunds with Stripe). Finance is
 * never shown as viewing an item: approvers would take it for someone who can decide it. Everyone
 * signed in sees the directory whole: the person who decided an item routed to your group may sit
 * in any group it moved up to, and the page names them.
 */
const TABLE: { readonly [R in Role]: { readonly [S in Resource]: Readonly<Record<Verb<S>, Reach>> } } = {
  approver: {
    item: { list: 'own_groups', read: 'own_groups' },
    decision: { make: 'own_groups' },
    ledger_row: { list: 'own_groups', read: 'own_groups' },
    receipt: { read: 'own_groups' },
    scoreboard_breakdown: { read: 'own_groups' },
    reconciliation: { read: 'none', start: 'none' },
    live_feed: { join: 'own_groups', presence: 'own_groups' },
    payment_panel: { read: 'own_groups' },
    export: { download: 'own_groups' },
    directory: { list: 'every' },
  },
  finance: {
    item: { list: 'every', read: 'every' },
    decision: { make: 'none' },
    ledger_row: { list: 'every', read: 'every' },
    receipt: { read: 'every' },
    scoreboard_breakdown: { read: 'every' },
    reconciliation: { read: 'every', start: 'every' },
    live_feed: { join: 'every', presence: 'none' },
    payment_panel: { read: 'every' },
    export: { download: 'every' },
    directory: { list: 'every' },
  },
};

/** How far this role reaches with this question. */
export function reachOf(role: Role, ask: Ask): Reach {
  const byVerb: Readonly<Record<string, Reach>> = TABLE[role][ask.resource];
  const reach = byVerb[ask.verb];
  if (reach === undefined) throw new Error(`access: no rule for ${role} ${ask.resource} ${ask.verb}`);
  return reach;
}

/** The questions of one resource, verb by verb. */
function asksOf(resource: Resource): Ask[] {
  switch (resource) {
    case 'item':
      return VERBS.item.map((verb) => ({ resource, verb }));
    case 'decision':
      return VERBS.decision.map((verb) => ({ resource, verb }));
    case 'ledger_row':
      return VERBS.ledger_row.map((verb) => ({ resource, verb }));
    case 'receipt':
      return VERBS.receipt.map((verb) => ({ resource, verb }));
    case 'scoreboard_breakdown':
      return VERBS.scoreboard_breakdown.map((verb) => ({ resource, verb }));
    case 'reconciliation':
      return VERBS.reconciliation.map((verb) => ({ resource, verb }));
    case 'live_feed':
      return VERBS.live_feed.map((verb) => ({ resource, verb }));
    case 'payment_panel':
      return VERBS.payment_panel.map((verb) => ({ resource, verb }));
    case 'export':
      return VERBS.export.map((verb) => ({ resource, verb }));
    case 'directory':
      return VERBS.directory.map((verb) => ({ resource, verb }));
    default:
      return assertNever(resource);
  }
}

/** Every question the rules answer, resource by resource and verb by verb. */
export function everyAsk(): Ask[] {
  return RESOURCES.flatMap(asksOf);
}

/** The groups a person is a member of (decides for, as an approver), from the config's groups now. */
export function groupsOf(name: string, groups: Groups): Set<string> {
  return new Set(Object.keys(groups).filter((group) => groups[group]!.includes(name)));
}

/** Whether the person may ask this at all, before anything is looked up (a route's first refusal). */
export function allows(person: Person, ask: Ask): boolean {
  return reachOf(person.role, ask) !== 'none';
}

/**
 * Whether the person may do this to one thing routed to `itemGroups` (every group a request went
 * to; for a decision, the group of the escalation decided). A request routed to no group (the
 * rules cleared it) is within `every` only.
 */
export function allowsOn(person: Person, groups: Groups, ask: Ask, itemGroups: Iterable<string>): boolean {
  const reach = reachOf(person.role, ask);
  switch (reach) {
    case 'every':
      return true;
    case 'none':
      return false;
    case 'own_groups': {
      const own = groupsOf(person.name, groups);
      for (const group of itemGroups) if (own.has(group)) return true;
      return false;
    }
    default:
      return assertNever(reach);
  }
}

/** The requests a reader's answer covers: those ever routed to one of `within`, or every request when it is absent. */
export interface ReadBound {
  within?: readonly string[];
}

/**
 * The bound of a list the person may ask for (the ledger, its totals and CSV, the scoreboard):
 * finance's is none, an approver's their own groups. Only asked once `allows` said yes.
 */
export function boundOf(person: Person, groups: Groups, ask: Ask): ReadBound {
  const reach = reachOf(person.role, ask);
  switch (reach) {
    case 'every':
      return {};
    case 'own_groups':
      return { within: [...groupsOf(person.name, groups)] };
    case 'none':
      throw new Error(`access: a bound asked for ${person.role} ${ask.resource} ${ask.verb}, which is refused`);
    default:
      return assertNever(reach);
  }
}

/**
 * The groups whose items a person's list covers (the inbox, the history, the live feed, presence):
 * `every` is every group of the config, `own_groups` their own, `none` none.
 */
export function groupsWithin(person: Person, groups: Groups, ask: Ask): Set<string> {
  const reach = reachOf(person.role, ask);
  switch (reach) {
    case 'every':
      return new Set(Object.keys(groups));
    case 'own_groups':
      return groupsOf(person.name, groups);
    case 'none':
      return new Set();
    default:
      return assertNever(reach);
  }
}

/** True when a request routed to `itemGroups` (every group it went to) is within the bound. */
export function isWithin(bound: ReadBound, itemGroups: readonly string[]): boolean {
  const within = bound.within;
  return within === undefined || itemGroups.some((group) => within.includes(group));
}

/** True when the bound lets its reader ask for one group's figures: finance any, an approver their own. */
export function mayAskForGroup(bound: ReadBound, group: string): boolean {
  return bound.within === undefined || bound.within.includes(group);
}

/**
 * Which people a person is shown in the directory, presence and "decided by": the directory's
 * reach. Today every signed-in person sees every person's name, display name and role.
 */
export function showsPerson(viewer: Person, groups: Groups, shown: Person): boolean {
  return allowsOn(viewer, groups, { resource: 'directory', verb: 'list' }, groupsOf(shown.name, groups));
}
