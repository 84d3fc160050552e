import { describe, expect, it } from 'vitest';
import type { ChainFigures } from '../../server/scoreboard/figures.ts';
import { escalationsByReasonAndGroup } from '../../server/scoreboard/series.ts';

function chain(reasons: string[], reasonGroups: string[]): ChainFigures {
  return { reasons, reasonGroups } as unknown as ChainFigures;
}

describe('scoreboard series: escalations by reason and group', () => {
  it('counts each trip by its reason and the group it went to first, most first, so a day of rule failures is more than one bar', () => {
    const rows = escalationsByReasonAndGroup([
      chain(['needs_judgment'], ['ap-leads']),
      chain(['needs_judgment'], ['ap-leads']),
      chain(['needs_judgment'], ['controller']),
      chain(['needs_judgment', 'stale_premise'], ['risk', 'risk']),
    ]);
    expect(rows).toEqual([
      { reason: 'needs_judgment', group: 'ap-leads', count: 2 },
      { reason: 'needs_judgment', group: 'controller', count: 1 },
      { reason: 'needs_judgment', group: 'risk', count: 1 },
      { reason: 'stale_premise', group: 'risk', count: 1 },
    ]);
  });
});
