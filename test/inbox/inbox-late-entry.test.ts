import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { InboxProjection } from '../../server/inbox/projection.ts';
import { inboxRefold } from '../../server/inbox/refold.ts';
import { INBOX_VIEW } from '../../server/inbox/table.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';

// A chain finished for good leaves memory; an entry that comes for it later (Stripe's word that a
// refund it called succeeded then failed) reads its summary back from its row and folds on, to
// the summary and row the journal alone gives, then leaves memory again.

let opened: OpenDatabase | null = null;
afterEach(() => {
  opened?.close();
  opened = null;
  cleanUpDatabases();
});

const REFUNDS = 40;

describe('a replay at start', () => {
  it('holds open work and one page of chains at most in every view, the closed ones let go of as each page is written', async () => {
    opened = openDatabase(join(makeTempDir(), 'interlock.sqlite'));
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    const tables = new SqliteDerivedTables(opened.db);
    // 2,505 entries: three pages of the follower's, all but one refund confirmed final.
    await journal.appendSealed(Array.from({ length: 500 }, (_, i) => refundChain(i + 1, ['succeeded'])).flat());
    await journal.appendSealed(refundChain(501, ['pending']));
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} }, derived: tables });
    expect(await views.replayAtStart()).toBeNull();
    // No catch-up since: what the replay's pages closed was let go of as each was written.
    expect(views.inboxHeld).toBe(1);
    // Every view let go the same way: a rebuild of a long history holds no more than a page.
    const held = views.held;
    expect(held.ledger).toBeLessThanOrEqual(1);
    expect(held.scoreboard).toBeLessThanOrEqual(1);
    expect(held.outboxItems).toBeLessThanOrEqual(1);
    expect((await views.current()).inbox.unconfirmedSent()).toEqual([refundEffectId(501)]);
  });
});

describe('a late entry for a chain no longer in memory', () => {
  it('is folded on its row, to what the journal alone gives, and the chain leaves memory again once written', async () => {
    opened = openDatabase(join(makeTempDir(), 'interlock.sqlite'));
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    const tables = new SqliteDerivedTables(opened.db);
    const late = refundChain(1, ['succeeded', 'failed']);
    await journal.appendSealed(late.slice(0, 5));
    await journal.appendSealed(Array.from({ length: REFUNDS - 1 }, (_, i) => refundChain(i + 2, ['succeeded'])).flat());
    // One Stripe has not settled yet: open work.
    const pending = refundChain(REFUNDS + 1, ['pending']);
    await journal.appendSealed(pending);
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} }, derived: tables });
    expect(await views.replayAtStart()).toBeNull();
    // Every refund but one is sent and confirmed final: once the tables hold them, they leave memory.
    const { inbox } = await views.current();
    expect([...inbox.chains.keys()]).toEqual([refundEffectId(REFUNDS + 1)]);
    const id = refundEffectId(1);
    const before = await inbox.summary(id);
    expect(before?.confirmations).toEqual(['succeeded']);

    await journal.appendSealed(late.slice(5));
    await views.current();
    // With nobody listening for moved chains, it left memory again once its page was written.
    expect([...inbox.chains.keys()]).toEqual([refundEffectId(REFUNDS + 1)]);
    const whole = new InboxProjection('inbox');
    for (const entry of late) whole.fold(entry);
    expect(await inbox.summary(id)).toEqual(whole.chains.get(id));
    const sealed = await journal.sealedChain(id);
    expect(await tables.get(INBOX_VIEW, id)).toEqual(inboxRefold.rowOf(sealed));
    // Watched (the outcome lines, the current facts): a chain that moved stays in memory until the next catch-up.
    const stop = views.onChainsMoved(() => {});
    await journal.appendSealed(refundChain(REFUNDS + 2, ['succeeded']));
    await views.current();
    expect(inbox.heldChains).toBe(2);
    stop();
    await views.current();
    expect(inbox.heldChains).toBe(1);
    expect((await inbox.summary(id))?.confirmations).toEqual(['succeeded', 'failed']);

    // A restart on the same file loads the open one from its row; the replay folds none of its entries again.
    const restarted = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} }, derived: tables });
    expect(await restarted.replayAtStart()).toBeNull();
    const again = (await restarted.current()).inbox;
    const open = new InboxProjection('inbox');
    for (const entry of pending) open.fold(entry);
    expect([...again.chains.values()]).toEqual([open.chains.get(refundEffectId(REFUNDS + 1))]);
    expect(again.unconfirmedSent()).toEqual([refundEffectId(REFUNDS + 1)]);
  });
});
