import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import type { Entry } from '../../shared/entries.ts';
import { generateJournal } from '../../bench/journal-gen.ts';
import { SMALL_TEMPLATES } from '../support/bench-templates.ts';
import { cleanUpDatabases, tempDbFile } from '../support/db-journals.ts';

// The bench's generated journal keeps the items waiting for a person bounded, as approvers who
// decide within the SLA would: the oldest past the bound are turned down, each decision linked to
// its chain's escalation. So open work stays the same while history grows.

const opened: OpenDatabase[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
  cleanUpDatabases();
});

/** A template chain: a request by an agent, then `kinds` after it. */

/** Every chain of the journal, by effect id, in seq order. */
async function chainsOf(file: string): Promise<Map<string, Entry[]>> {
  const database = openDatabase(file);
  opened.push(database);
  const journal = new SqliteJournal({ db: database.db, wallClockMs: () => Date.now() });
  const chains = new Map<string, Entry[]>();
  for (const { entry } of await journal.scan(0, 1_000_000)) chains.set(entry.effect_id, [...(chains.get(entry.effect_id) ?? []), entry]);
  return chains;
}

const waiting = (chains: Map<string, Entry[]>) => [...chains.values()].filter((chain) => chain.at(-1)!.kind === 'ESCALATED').length;

describe('the generated journal', () => {
  it('keeps at most the bound of items waiting, the oldest decided, across extensions and a lower bound later', async () => {
    const file = tempDbFile();
    const next = await generateJournal(file, SMALL_TEMPLATES, 1_000, 0, 3);
    let chains = await chainsOf(file);
    expect(waiting(chains)).toBe(3);
    // Without the bound, every twentieth chain would wait: about 20 of 400 here.
    const decisions = [...chains.values()].filter((chain) => chain.length === 3 && chain[1]!.kind === 'ESCALATED' && chain[2]!.kind === 'DECIDED');
    expect(decisions.length).toBeGreaterThan(15);
    for (const chain of decisions) expect(chain[2]).toMatchObject({ decision: 'reject', escalation: chain[1]!.hash, prev: chain[1]!.hash });
    // The newest escalations are the ones still waiting.
    const escalated = [...chains.values()].filter((chain) => chain[1]?.kind === 'ESCALATED');
    expect(escalated.map((chain) => chain.at(-1)!.kind)).toEqual([...Array(escalated.length - 3).fill('DECIDED'), 'ESCALATED', 'ESCALATED', 'ESCALATED']);

    await generateJournal(file, SMALL_TEMPLATES, 2_000, next, 3);
    expect(waiting(await chainsOf(file))).toBe(3);
    await generateJournal(file, SMALL_TEMPLATES, 0, 0, 1);
    chains = await chainsOf(file);
    expect(waiting(chains)).toBe(1);
  });
});
