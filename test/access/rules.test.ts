import { describe, expect, it } from 'vitest';
import { ROLES } from '../../shared/api.ts';
import { type Ask, allows, allowsOn, everyAsk, groupsOf, groupsWithin, type Reach, reachOf, showsPerson } from '../../server/access/rules.ts';

// Who may do what: every role x resource x verb with its answer, the last column the expected
// reach (every request, those ever routed to one's own groups, none). A resource or verb added to
// the rules without a row here fails the completeness test below.

const TABLE: ReadonlyArray<readonly [Ask['resource'], string, Reach, Reach]> = [
  // resource, verb, approver, finance
  ['item', 'list', 'own_groups', 'every'],
  ['item', 'read', 'own_groups', 'every'],
  ['decision', 'make', 'own_groups', 'none'],
  ['ledger_row', 'list', 'own_groups', 'every'],
  ['ledger_row', 'read', 'own_groups', 'every'],
  ['receipt', 'read', 'own_groups', 'every'],
  ['scoreboard_breakdown', 'read', 'own_groups', 'every'],
  ['reconciliation', 'read', 'none', 'every'],
  ['reconciliation', 'start', 'none', 'every'],
  ['live_feed', 'join', 'own_groups', 'every'],
  ['live_feed', 'presence', 'own_groups', 'none'],
  ['payment_panel', 'read', 'own_groups', 'every'],
  ['export', 'download', 'own_groups', 'every'],
  ['directory', 'list', 'every', 'every'],
];

const ask = (resource: string, verb: string) => ({ resource, verb }) as Ask;
const groups = { 'ap-leads': ['ana', 'bea'], 'finance-manager': ['cy'], both: ['ana'] };
const ana = { name: 'ana', role: 'approver' } as const;
const cy = { name: 'cy', role: 'approver' } as const;
const fin = { name: 'fin', role: 'finance' } as const;
const nobody = { name: 'nobody', role: 'approver' } as const;

describe('access rules: role x resource x verb', () => {
  it('the table lists every question the rules answer, once, for every role', () => {
    expect(TABLE.map(([resource, verb]) => `${resource} ${verb}`)).toEqual(everyAsk().map((a) => `${a.resource} ${a.verb}`));
    expect(ROLES).toEqual(['approver', 'finance']);
  });

  it.each(TABLE.flatMap(([resource, verb, approver, finance]) => [['approver', resource, verb, approver] as const, ['finance', resource, verb, finance] as const]))(
    '%s: %s %s reaches %s',
    (role, resource, verb, expected) => {
      expect(reachOf(role, ask(resource, verb))).toBe(expected);
      expect(allows({ name: 'someone', role }, ask(resource, verb))).toBe(expected !== 'none');
    },
  );

  it.each([
    ['ana decides for her group', ana, 'decision', 'make', ['ap-leads'], true],
    ['ana decides for no other group', ana, 'decision', 'make', ['finance-manager'], false],
    ['finance decides for no group', fin, 'decision', 'make', ['ap-leads'], false],
    ['ana reads an item that moved on from her group', ana, 'item', 'read', ['ap-leads', 'finance-manager'], true],
    ['cy reads an item that moved up to his group', cy, 'item', 'read', ['ap-leads', 'finance-manager'], true],
    ["cy reads no item of ana's group alone", cy, 'item', 'read', ['ap-leads'], false],
    ['finance reads an item of any group', fin, 'item', 'read', ['finance-manager'], true],
    ['finance reads a ledger row the rules cleared (no group)', fin, 'ledger_row', 'read', [], true],
    ['ana reads no ledger row the rules cleared (no group)', ana, 'ledger_row', 'read', [], false],
    ['ana reads the receipt of her group', ana, 'receipt', 'read', ['both'], true],
    ["cy is told no other request on a payment of ana's group", cy, 'payment_panel', 'read', ['ap-leads'], false],
    ['an approver of no group reads nothing', nobody, 'item', 'read', ['ap-leads'], false],
    ['ana is shown viewing an item of her group', ana, 'live_feed', 'presence', ['ap-leads'], true],
    ['finance is never shown viewing', fin, 'live_feed', 'presence', ['ap-leads'], false],
    ['finance hears every group on the live feed', fin, 'live_feed', 'join', ['finance-manager'], true],
    ['an approver reconciles nothing', ana, 'reconciliation', 'start', ['ap-leads'], false],
  ] as const)('%s: %s', (_case, person, resource, verb, itemGroups, expected) => {
    expect(allowsOn(person, groups, ask(resource, verb), itemGroups)).toBe(expected);
  });

  it("lists cover the person's own groups, or every group of the config, or none", () => {
    expect([...groupsWithin(ana, groups, ask('item', 'list'))].sort()).toEqual(['ap-leads', 'both']);
    expect([...groupsWithin(fin, groups, ask('item', 'list'))].sort()).toEqual(['ap-leads', 'both', 'finance-manager']);
    expect([...groupsWithin(fin, groups, ask('live_feed', 'presence'))]).toEqual([]);
    expect([...groupsOf('cy', groups)]).toEqual(['finance-manager']);
  });

  it('the groups are read at each call: a member removed from the config is refused at the next question', () => {
    const now: Record<string, string[]> = { 'ap-leads': ['ana'] };
    expect(allowsOn(ana, now, ask('decision', 'make'), ['ap-leads'])).toBe(true);
    now['ap-leads'] = [];
    expect(allowsOn(ana, now, ask('decision', 'make'), ['ap-leads'])).toBe(false);
  });

  it('every signed-in person is shown every person in the directory, presence and "decided by"', () => {
    for (const viewer of [ana, cy, fin, nobody]) for (const shown of [ana, cy, fin]) expect(showsPerson(viewer, groups, shown)).toBe(true);
  });
});
