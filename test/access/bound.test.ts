import { describe, expect, it } from 'vitest';
import { boundOf, isWithin, mayAskForGroup, type Person } from '../../server/access/rules.ts';

// Which requests a person may read: the one bound the ledger and the scoreboard put on a reader,
// asked of the access rules.

const groups = { 'ap-leads': ['ana', 'bea'], controller: ['cy'], risk: ['rita'], both: ['ana'] };
const readable = (person: Person) => boundOf(person, groups, { resource: 'ledger_row', verb: 'list' });

describe('readable: the bound a person reads within', () => {
  it.each([
    ['fin', 'finance', {}],
    ['ana', 'approver', { within: ['ap-leads', 'both'] }],
    ['cy', 'approver', { within: ['controller'] }],
    ['nobody', 'approver', { within: [] }],
  ] as const)('%s (%s) reads within %j', (name, role, bound) => {
    expect(readable({ name, role })).toEqual(bound);
  });

  it.each([
    ['finance, a request no person saw', true, 'fin', 'finance', []],
    ['finance, a request of risk', true, 'fin', 'finance', ['risk']],
    ['ana, a request of her group', true, 'ana', 'approver', ['ap-leads']],
    ['ana, a request that moved on from her group', true, 'ana', 'approver', ['ap-leads', 'controller']],
    ['ana, a request that moved to her group', true, 'ana', 'approver', ['controller', 'both']],
    ['ana, a request of risk', false, 'ana', 'approver', ['risk']],
    ['ana, a request no person saw', false, 'ana', 'approver', []],
    ['an approver of no group, any request', false, 'nobody', 'approver', ['ap-leads']],
  ] as const)('%s: readable %s', (_case, expected, name, role, groups) => {
    expect(isWithin(readable({ name, role }), groups)).toBe(expected);
  });

  it.each([
    ['fin', 'finance', 'risk', true],
    ['ana', 'approver', 'ap-leads', true],
    ['ana', 'approver', 'risk', false],
    ['rita', 'approver', 'risk', true],
  ] as const)("%s (%s) may ask for %s's figures: %s", (name, role, group, expected) => {
    expect(mayAskForGroup(readable({ name, role }), group)).toBe(expected);
  });
});
