import type { Entry } from '../../shared/entries.ts';
import { allowsOn } from '../../server/access/rules.ts';
import { CONFIG, type World } from './world.ts';

// No decision by someone the access rules refuse: every person's DECIDED is judged at the instant it
// is written, by the access rules over the simulator's groups as they are then (people leave and
// rejoin groups as the run goes), never by what the code under test recorded of them.

/** Judge one entry as it is written: a person's decision must be one the access rules allow them now. */
export function judgeDecision(world: World, entry: Entry): void {
  if (entry.kind !== 'DECIDED') return;
  world.hit('check.decision_allowed');
  const person = CONFIG.people.find((p) => p.name === entry.by);
  if (person !== undefined && allowsOn(person, world.groups, { resource: 'decision', verb: 'make' }, [entry.group])) return;
  world.violation(
    `no decision by someone the access rules refuse: ${entry.by} decided ${entry.effect_id} (${entry.decision}) for ${entry.group}, whose members are ${(world.groups[entry.group] ?? []).join(', ') || 'nobody'}`,
  );
}
