import { describe, expect, it } from 'vitest';
import type { ConfigEntry } from '../../shared/entries.ts';
import {
  configEntryFields,
  decideConfigAtStart,
  describeRosterChanges,
  journaledConfig,
  peopleWhoLost,
  type Roster,
  rosterOf,
  type StartConfigStep,
} from '../../server/config/config-at-start.ts';
import { testConfig } from '../support/app-world.ts';

// What a start journals of the config it loaded, as a table: the last CONFIG entry (as the journal
// names it), the file loaded, and the step.

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const BEFORE: Roster = { people: ['ana', 'bea', 'cy'], members: [{ group: 'ap-leads', name: 'ana' }, { group: 'ap-leads', name: 'bea' }, { group: 'controller', name: 'cy' }] };
const WITHOUT_BEA: Roster = { people: ['ana', 'cy'], members: [{ group: 'ap-leads', name: 'ana' }, { group: 'controller', name: 'cy' }] };
const CY_IN_AP_LEADS: Roster = { people: ['ana', 'bea', 'cy', 'dee'], members: [...BEFORE.members, { group: 'ap-leads', name: 'cy' }] };
const NO_ONE = { peopleAdded: [], peopleRemoved: [], joined: [], left: [] };

describe('decideConfigAtStart', () => {
  it.each<[string, { sha256: string; roster: Roster | null } | null, { sha256: string; roster: Roster }, StartConfigStep]>([
    ['the journal names no config (its first start, or one from before)', null, { sha256: A, roster: BEFORE }, { step: 'journal', comparedWith: null, changes: NO_ONE }],
    ['the journal names this file with its roster', { sha256: A, roster: BEFORE }, { sha256: A, roster: BEFORE }, { step: 'none' }],
    ['this file, named by a reload entry without a roster: the roster, compared with the same file', { sha256: A, roster: null }, { sha256: A, roster: BEFORE }, { step: 'journal', comparedWith: A, changes: NO_ONE }],
    [
      'another file with its roster: who left',
      { sha256: A, roster: BEFORE },
      { sha256: B, roster: WITHOUT_BEA },
      { step: 'journal', comparedWith: A, changes: { peopleAdded: [], peopleRemoved: ['bea'], joined: [], left: [{ group: 'ap-leads', name: 'bea' }] } },
    ],
    [
      'another file with its roster: who came and joined',
      { sha256: A, roster: BEFORE },
      { sha256: B, roster: CY_IN_AP_LEADS },
      { step: 'journal', comparedWith: A, changes: { peopleAdded: ['dee'], peopleRemoved: [], joined: [{ group: 'ap-leads', name: 'cy' }], left: [] } },
    ],
    ['another file, only its comments changed: journaled, no one came or went', { sha256: A, roster: BEFORE }, { sha256: B, roster: BEFORE }, { step: 'journal', comparedWith: A, changes: NO_ONE }],
    ['another file, named by a reload entry without a roster: nothing to compare with', { sha256: A, roster: null }, { sha256: B, roster: WITHOUT_BEA }, { step: 'journal', comparedWith: null, changes: NO_ONE }],
  ])('%s', (_name, last, loaded, expected) => {
    expect(decideConfigAtStart(last, loaded)).toEqual(expected);
  });
});

describe('the CONFIG entry a start reads and writes', () => {
  const entry = (fields: Partial<ConfigEntry>): ConfigEntry => ({
    kind: 'CONFIG',
    effect_id: 'c'.padEnd(24, '0'),
    ts_ms: 0,
    prev: null,
    hash: 'h',
    at_ms: 0,
    sha256: A,
    people_added: [],
    people_removed: [],
    joined: [],
    left: [],
    ...fields,
  });

  it('a reload entry written before rosters names its file without one; a later one names both', () => {
    expect(journaledConfig(undefined)).toBeNull();
    expect(journaledConfig(entry({}))).toEqual({ sha256: A, roster: null });
    expect(journaledConfig(entry({ people: BEFORE.people, members: BEFORE.members }))).toEqual({ sha256: A, roster: BEFORE });
  });

  it('the roster is sorted, so the same people in another order are the same roster', () => {
    const config = testConfig();
    const reordered = { people: [...config.people].reverse(), groups: Object.fromEntries(Object.entries(config.groups).reverse().map(([g, m]) => [g, [...m].reverse()])) };
    expect(rosterOf(reordered)).toEqual(rosterOf(config));
  });

  it('what it writes reads back as the roster it was written with', () => {
    const fields = configEntryFields({ atMs: 5, sha256: B, cause: 'start', comparedWith: A, roster: WITHOUT_BEA, changes: NO_ONE });
    expect(fields).toMatchObject({ cause: 'start', compared_with: A, people: WITHOUT_BEA.people, members: WITHOUT_BEA.members });
    expect(journaledConfig(entry(fields))).toEqual({ sha256: B, roster: WITHOUT_BEA });
  });

  it('who lost authority, and what the operator is told', () => {
    const changes = { peopleAdded: ['dee'], peopleRemoved: ['bea'], joined: [], left: [{ group: 'ap-leads', name: 'bea' }, { group: 'risk', name: 'cy' }] };
    expect(peopleWhoLost(changes)).toEqual(new Set(['bea', 'cy']));
    expect(describeRosterChanges(changes)).toEqual(['people added: dee', 'people removed: bea', 'left: bea in ap-leads, cy in risk']);
    expect(describeRosterChanges(NO_ONE)).toEqual(['no one came or went']);
  });
});
