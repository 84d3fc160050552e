import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';
import { checkSealedChain } from '../../server/journal/seals.ts';
import { relinkChain, resealFrom, rewriteEntry, storedSealedChain, tamper } from '../support/tamper.ts';

// A chain shown or signed is held entry by entry against its hashes and the global chain's seals,
// with no state of the chain kept in memory; and each catch-up holds the seal stored at its last
// entry against the global chain the views recomputed. Rows are changed here under a running
// server, as someone who can write the data folder would (the hash is no secret, the key is).

let world: AppWorld | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

/** A committed refund, the views caught up with it: its effect id and its entries' seqs. */
async function committed(requestId: string): Promise<{ w: AppWorld; effectId: string; seqs: number[] }> {
  world = await buildAppWorld();
  const w = world;
  const pi = await w.payment(5_000);
  const answer = await w.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 2_000 });
  expect(answer.json()).toMatchObject({ status: 'COMMITTED' });
  const effectId: string = answer.json().effect_id;
  await w.services.views.current();
  let seqs: number[] = [];
  edit(w, (sqlite) => {
    seqs = sqlite.prepare('SELECT seq FROM entries WHERE effect_id = ? ORDER BY seq').pluck().all(effectId) as number[];
  });
  expect(seqs.length).toBeGreaterThanOrEqual(3);
  return { w, effectId, seqs };
}

function edit(w: AppWorld, change: Parameters<typeof tamper>[1]): void {
  tamper(join(w.dir, 'interlock.sqlite'), change);
}

async function receiptStatus(w: AppWorld, effectId: string): Promise<[number, string | null]> {
  const answer = await w.agent('GET', `/v1/receipts/${effectId}`);
  return [answer.statusCode, answer.statusCode === 200 ? null : answer.json().error.code];
}

describe('a chain shown or signed is held against its seals', () => {
  it('its last row rewritten with a hash that holds: the seal it kept refuses it before any receipt is signed', async () => {
    const { w, effectId, seqs } = await committed('case-last');
    edit(w, (sqlite) => rewriteEntry(sqlite, seqs.at(-1) as number, { why: 'rewritten' }));
    expect(await receiptStatus(w, effectId)).toEqual([503, 'journal_unavailable']);
    expect(w.services.views.unavailable?.corrupt.message).toMatch(new RegExp(`seq ${seqs.at(-1)} is not the entry its global seal sealed`));
  });

  it('an old row rewritten and the rest of its chain relinked, every hash and link holding: its seal refuses it', async () => {
    const { w, effectId, seqs } = await committed('case-relinked');
    edit(w, (sqlite) => {
      rewriteEntry(sqlite, seqs[0] as number, { why: 'rewritten' });
      relinkChain(sqlite, effectId, seqs[0] as number);
    });
    expect(await receiptStatus(w, effectId)).toEqual([503, 'journal_unavailable']);
    expect(w.services.views.unavailable?.corrupt.message).toMatch(new RegExp(`seq ${seqs[0]} is not the entry its global seal sealed`));
  });

  it('one seal edited in the middle of the chain: the entry it seals and the one after it no longer follow', async () => {
    const { w, effectId, seqs } = await committed('case-seal');
    edit(w, (sqlite) => sqlite.prepare('UPDATE journal_seals SET global_hash = ? WHERE seq = ?').run('0'.repeat(64), seqs[1]));
    expect(await receiptStatus(w, effectId)).toEqual([503, 'journal_unavailable']);
    expect(w.services.views.unavailable?.corrupt.seq).toBe(seqs[1]);
  });
});

describe('each catch-up holds the stored head against the global chain the views recomputed', () => {
  it('a row and every seal after it rewritten consistently: the chain read alone would pass, the next read refuses 503', async () => {
    const { w, effectId, seqs } = await committed('case-resealed');
    edit(w, (sqlite) => {
      rewriteEntry(sqlite, seqs[0] as number, { why: 'rewritten' });
      relinkChain(sqlite, effectId, seqs[0] as number);
      resealFrom(sqlite, seqs[0] as number);
    });
    // Every hash, link and seal of the chain holds as stored.
    const stored = await storedSealedChain(join(w.dir, 'interlock.sqlite'), effectId);
    expect(checkSealedChain(effectId, stored)).toHaveLength(seqs.length);
    const answer = await w.agent('GET', '/v1/refunds/case-resealed');
    expect([answer.statusCode, answer.json().error?.code]).toEqual([503, 'journal_unavailable']);
    expect(w.services.views.unavailable?.corrupt.message).toMatch(/global seal at seq \d+ is not the global chain the views recomputed/);
  });

  it('the newest seal edited: the next read refuses 503, with nothing appended since', async () => {
    const { w, effectId } = await committed('case-head');
    edit(w, (sqlite) => sqlite.prepare('UPDATE journal_seals SET global_hash = ? WHERE seq = (SELECT max(seq) FROM journal_seals)').run('1'.repeat(64)));
    expect(await receiptStatus(w, effectId)).toEqual([503, 'journal_unavailable']);
    expect(w.services.views.unavailable?.corrupt.message).toMatch(/global seal at seq \d+ is not the global chain the views recomputed/);
  });
});
