import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { Entry } from '../../shared/entries.ts';
import { LedgerView } from '../../server/ledger/view.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';

// What a chain stood at before it moved, as the ledger view tells the watchers of moves: an open
// chain's row in memory, a chain the tables already hold (another process wrote them) folded from
// the journal at the entry before, a new chain nothing; let go of once they are told.

let dir: string;
let storage: Storage;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-ledger-moved-'));
  storage = await openStorage({ file: join(dir, 'interlock.sqlite') });
});
afterAll(async () => {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A ledger view over `chains`, with the tables' cursor at `tablesSeq.at`, watched while `watched.on`. */
function ledgerOver(chains: ReadonlyMap<string, Entry[]>, tablesSeq: { at: number }, watched = { on: true }) {
  return new LedgerView({
    inboxName: 'inbox',
    tables: storage.derived,
    entries: async (effectId) => chains.get(effectId) ?? [],
    tablesSeq: () => tablesSeq.at,
    viewsSeq: () => 100,
    watching: () => watched.on,
  });
}

const standing = (view: LedgerView, effectId: string) => {
  const { before, row } = view.moved(effectId);
  return { before, status: row?.status ?? null };
};

describe('what a moved chain stood at before', () => {
  it('a chain in memory: its status before the first entry since the watchers were told', async () => {
    const chain = refundChain(1, ['succeeded']);
    const id = refundEffectId(1);
    const view = ledgerOver(new Map([[id, chain]]), { at: 0 });
    // PROPOSED, AUTHORIZED, DISPATCHED: a new request, in flight.
    for (const [i, entry] of chain.slice(0, 3).entries()) view.note(entry, i + 1);
    await view.settle();
    expect(standing(view, id)).toEqual({ before: null, status: 'IN_FLIGHT' });
    view.told();
    view.note(chain[3]!, 4);
    view.note(chain[4]!, 5);
    await view.settle();
    expect(standing(view, id)).toEqual({ before: 'IN_FLIGHT', status: 'COMMITTED' });
  });

  it('a chain whose entries the tables hold already: folded from the journal, before and now', async () => {
    const chain = refundChain(2, ['pending', 'succeeded']);
    const id = refundEffectId(2);
    const view = ledgerOver(new Map([[id, chain.slice(0, 4)]]), { at: 50 });
    for (const [i, entry] of chain.slice(0, 4).entries()) view.note(entry, i + 1);
    await view.settle();
    expect(standing(view, id)).toEqual({ before: null, status: 'COMMITTED' });
    expect(view.heldChains).toBe(0);
    view.told();
    expect(standing(view, id)).toEqual({ before: null, status: null });

    const later = ledgerOver(new Map([[id, chain]]), { at: 50 });
    later.note(chain[4]!, 5);
    later.note(chain[5]!, 6);
    await later.settle();
    expect(standing(later, id)).toEqual({ before: 'COMMITTED', status: 'COMMITTED' });
    expect(later.moved(id).row).toMatchObject({ confirmation: 'succeeded', request_id: 'refund-2' });
  });

  it('keeps and reads nothing for the watchers while nobody watches', async () => {
    const chain = refundChain(3, ['succeeded']);
    const id = refundEffectId(3);
    const watched = { on: false };
    let reads = 0;
    const view = new LedgerView({
      inboxName: 'inbox',
      tables: storage.derived,
      entries: async () => {
        reads += 1;
        return chain;
      },
      tablesSeq: () => 50,
      viewsSeq: () => 100,
      watching: () => watched.on,
    });
    for (const [i, entry] of chain.slice(0, 4).entries()) view.note(entry, i + 1);
    await view.settle();
    expect([reads, standing(view, id)]).toEqual([0, { before: null, status: null }]);
    watched.on = true;
    view.note(chain[4]!, 5);
    await view.settle();
    expect([reads, standing(view, id)]).toEqual([1, { before: 'COMMITTED', status: 'COMMITTED' }]);
  });
});
