import type { ConfigCause, ConfigEntry, FieldsOf, Membership } from '../../shared/entries.ts';
import type { InterlockConfig } from './schema.ts';

/**
 * What a start journals of the config it loaded, decided from the last CONFIG entry and the file:
 * a file edited while the server was down is journaled as a reload is (its SHA-256, who came and
 * went), so the journal names every config that was in force and a rebuild equals the live views.
 * Pure: the shell (server/app/reload.ts `ConfigReloader.atStart`) reads the entry, appends, and lapses.
 */

/** Who works here under a config: every person by name, and every membership of a group, sorted. */
export interface Roster {
  people: string[];
  members: Membership[];
}

/** The config in force as the journal last named it: its file's SHA-256, and its roster when the entry carries one. */
export interface JournaledConfig {
  sha256: string;
  roster: Roster | null;
}

/** Who came and went between two rosters. */
export interface RosterChanges {
  peopleAdded: string[];
  peopleRemoved: string[];
  joined: Membership[];
  left: Membership[];
}

/** What the start does: nothing (the journal names this config), or journal a CONFIG entry. */
export type StartConfigStep =
  | { step: 'none' }
  | {
      step: 'journal';
      /** The SHA-256 of the config compared with; null when the journal holds no roster to compare with. */
      comparedWith: string | null;
      changes: RosterChanges;
    };

/** The roster of a config. */
export function rosterOf(config: Pick<InterlockConfig, 'people' | 'groups'>): Roster {
  const members = Object.entries(config.groups).flatMap(([group, names]) => names.map((name) => ({ group, name })));
  return { people: config.people.map((p) => p.name).sort(), members: sortedMemberships(members) };
}

/** The config the last CONFIG entry names, or null when the journal holds none. */
export function journaledConfig(last: ConfigEntry | undefined): JournaledConfig | null {
  if (last === undefined) return null;
  const roster = last.people !== undefined && last.members !== undefined ? { people: last.people, members: last.members } : null;
  return { sha256: last.sha256, roster };
}

/**
 * Decide the start's CONFIG entry, first match wins:
 * - the journal names no config (its first start, or one written before starts journaled the
 *   config): journal this one, with no one added or removed, for there is nothing to compare with;
 * - the journal names this very file with its roster: nothing;
 * - it names this file without a roster (a reload's entry written before rosters): journal the
 *   roster, compared with the same file, so no one came or went and the next start can compare;
 * - it names another file with its roster: journal who came and went since;
 * - it names another file without a roster: journal this one, with no one added or removed.
 */
export function decideConfigAtStart(last: JournaledConfig | null, loaded: { sha256: string; roster: Roster }): StartConfigStep {
  if (last === null) return { step: 'journal', comparedWith: null, changes: NO_CHANGES };
  if (last.roster === null) {
    return last.sha256 === loaded.sha256 ? { step: 'journal', comparedWith: last.sha256, changes: NO_CHANGES } : { step: 'journal', comparedWith: null, changes: NO_CHANGES };
  }
  const changes = rosterChanges(last.roster, loaded.roster);
  if (last.sha256 === loaded.sha256 && sameRoster(last.roster, loaded.roster)) return { step: 'none' };
  return { step: 'journal', comparedWith: last.sha256, changes };
}

/** Who came and went from `before` to `after`. */
export function rosterChanges(before: Roster, after: Roster): RosterChanges {
  return {
    peopleAdded: after.people.filter((name) => !before.people.includes(name)).sort(),
    peopleRemoved: before.people.filter((name) => !after.people.includes(name)).sort(),
    joined: membershipsWithout(after.members, before.members),
    left: membershipsWithout(before.members, after.members),
  };
}

/** The CONFIG entry's fields, as a reload or a start writes them. */
export function configEntryFields(change: {
  atMs: number;
  sha256: string;
  cause: ConfigCause;
  comparedWith: string | null;
  roster: Roster;
  changes: RosterChanges;
}): FieldsOf<'CONFIG'> {
  return {
    at_ms: change.atMs,
    sha256: change.sha256,
    people_added: change.changes.peopleAdded,
    people_removed: change.changes.peopleRemoved,
    joined: change.changes.joined,
    left: change.changes.left,
    cause: change.cause,
    compared_with: change.comparedWith,
    people: change.roster.people,
    members: change.roster.members,
  };
}

/** Who came and went, in the operator's words: one line per kind of change. */
export function describeRosterChanges(changes: RosterChanges): string[] {
  const member = (m: Membership) => `${m.name} in ${m.group}`;
  const lines: Array<[string, readonly string[]]> = [
    ['people added', changes.peopleAdded],
    ['people removed', changes.peopleRemoved],
    ['joined', changes.joined.map(member)],
    ['left', changes.left.map(member)],
  ];
  const said = lines.filter(([, list]) => list.length > 0).map(([label, list]) => `${label}: ${list.join(', ')}`);
  return said.length > 0 ? said : ['no one came or went'];
}

/** The people whose authority a start's changes took away: removed, or out of a group. */
export function peopleWhoLost(changes: RosterChanges): Set<string> {
  return new Set([...changes.peopleRemoved, ...changes.left.map((m) => m.name)]);
}

/** Both rosters are sorted, so equal rosters spell the same. */
function sameRoster(a: Roster, b: Roster): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const NO_CHANGES: RosterChanges = { peopleAdded: [], peopleRemoved: [], joined: [], left: [] };

function sortedMemberships(list: Membership[]): Membership[] {
  return [...list].sort((a, b) => a.group.localeCompare(b.group) || a.name.localeCompare(b.name));
}

function membershipsWithout(list: readonly Membership[], removed: readonly Membership[]): Membership[] {
  return sortedMemberships(list.filter((m) => !removed.some((r) => r.group === m.group && r.name === m.name)));
}
