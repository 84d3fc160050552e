import { sealNext } from '../../db/journal-rules.ts';
import type { Entry } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import type { Templates } from '../../bench/journal-gen.ts';
import { fields } from './db-journals.ts';

/** A template chain for the bench's journal generator: a request by an agent, then `kinds` after it (a decision turns the escalation before it down). */
export function templateChain(id: string, kinds: Array<'ESCALATED' | 'DECIDED' | 'AUTHORIZED'>): Entry[] {
  const chain: Entry[] = [];
  const effectId = `t-${id}`;
  chain.push(sealNext('PROPOSED', effectId, fields('PROPOSED', { request: { id, agent: 'support-bot' } }) as unknown as JsonObject, undefined, 1_000));
  for (const kind of kinds) {
    const extra = kind === 'DECIDED' ? { decision: 'reject', escalation: chain.at(-1)!.hash } : kind === 'ESCALATED' ? { routed_to: ['ana'] } : {};
    chain.push(sealNext(kind, effectId, fields(kind, extra) as unknown as JsonObject, chain.at(-1), 1_000 + chain.length));
  }
  return chain;
}

/** Templates of every class but approved: a routine chain, one turned down, one left waiting. */
export const SMALL_TEMPLATES: Templates = {
  routine: [templateChain('routine', ['AUTHORIZED'])],
  approved: [],
  rejected: [templateChain('rejected', ['ESCALATED', 'DECIDED'])],
  open: [templateChain('open', ['ESCALATED'])],
};
