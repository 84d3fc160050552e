// Which requests a person may read, from the config: the one bound the ledger (its pages, its CSV,
// its receipts) and the scoreboard (its figures, its CSV, its series) put on a reader. Pure.
import { assertNever } from '../../shared/statuses.ts';
import type { InterlockConfig, PersonConfig } from './schema.ts';

/** The requests a person may read: those ever routed to one of `within`, or every request when it is absent. */
export interface ReadBound {
  within?: readonly string[];
}

/**
 * What this person may read: finance every request (no bound); an approver the requests ever
 * routed to one of their groups, as their inbox and history show them. A request no person saw
 * (cleared under the rules) was routed to no group, so it is no approver's.
 */
export function readable(config: Pick<InterlockConfig, 'groups'>, person: Pick<PersonConfig, 'name' | 'role'>): ReadBound {
  switch (person.role) {
    case 'finance':
      return {};
    case 'approver':
      return { within: Object.keys(config.groups).filter((group) => config.groups[group]!.includes(person.name)) };
    default:
      return assertNever(person.role);
  }
}

/** True when a request routed to `groups` (every group it went to) is within the bound. */
export function isReadable(bound: ReadBound, groups: readonly string[]): boolean {
  const within = bound.within;
  return within === undefined || groups.some((group) => within.includes(group));
}

/** True when the bound lets its reader ask for one group's figures: finance any, an approver their own. */
export function mayReadGroup(bound: ReadBound, group: string): boolean {
  return bound.within === undefined || bound.within.includes(group);
}
