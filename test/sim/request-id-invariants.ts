import type { Entry } from '../../shared/entries.ts';
import type { World } from './world.ts';

// The x-request-id of an agent's call is journaled on the PROPOSED its call wrote, and nothing
// else: it is no part of the payload (a retry under another id is the same request) and never
// part of a send (a resend under the same key must be the same call to Stripe, or Stripe refuses it).

/** The x-request-ids each world's agents asked with, by effect id. */
const asked = new WeakMap<World, Map<string, Set<string>>>();
/** How many calls each world's agents made. */
const calls = new WeakMap<World, number>();

/** A new x-request-id for an agent's call about `effectId`: a counter, so a seed replays to the same journal. */
export function nextHttpRequestId(world: World, effectId: string): string {
  let byEffect = asked.get(world);
  if (byEffect === undefined) {
    byEffect = new Map();
    asked.set(world, byEffect);
  }
  const ids = byEffect.get(effectId) ?? new Set<string>();
  byEffect.set(effectId, ids);
  const n = (calls.get(world) ?? 0) + 1;
  calls.set(world, n);
  const id = `sim-call-${n}`;
  ids.add(id);
  return id;
}

/**
 * Every x-request-id in the journal is on a PROPOSED, and is one an agent's call about that chain
 * was given; the chain's first PROPOSED written by an agent's call keeps one.
 */
export function checkRequestIds(world: World, chains: ReadonlyMap<string, Entry[]>): void {
  const byEffect = asked.get(world) ?? new Map<string, Set<string>>();
  for (const [effectId, chain] of chains) {
    for (const entry of chain) {
      // Read off any kind: the invariant is that only a PROPOSED has one.
      const kept: unknown = Reflect.get(entry, 'http_request_id');
      if (kept === undefined) continue;
      if (entry.kind !== 'PROPOSED') {
        world.violation(`an x-request-id is kept on PROPOSED only: ${effectId} has one on ${entry.kind}`);
        continue;
      }
      world.hit('check.http_request_id');
      if (!byEffect.get(effectId)?.has(String(kept))) {
        world.violation(`${effectId}: PROPOSED keeps x-request-id ${String(kept)}, which no call about it was given`);
      }
    }
  }
}
