import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';
import { fields } from '../support/db-journals.ts';

// The views verified every chain they applied, entry by entry, and keep where each one stood. A
// chain the services read later (to answer a request sent again, to decide whether a send may
// start) must still extend it: a chain removed or rewritten under a running server (someone who
// can write the data folder, a compromised sync) would otherwise make a refund already sent look
// new, and past Stripe's 24 h idempotency window be sent a second time.

const DAY_MS = 86_400_000;
let world: AppWorld | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

/** Change the journal file as an attacker would, with the append-only triggers off and put back after. */
function behindTheServer(dir: string, edit: (sqlite: Database.Database) => void): void {
  const sqlite = new Database(join(dir, 'interlock.sqlite'));
  try {
    const triggers = sqlite.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'entries'").all() as Array<{ name: string; sql: string }>;
    for (const { name } of triggers) sqlite.exec(`DROP TRIGGER "${name}"`);
    edit(sqlite);
    for (const { sql } of triggers) sqlite.exec(sql);
  } finally {
    sqlite.close();
  }
}

function rowCount(dir: string): number {
  const sqlite = new Database(join(dir, 'interlock.sqlite'), { readonly: true });
  try {
    return sqlite.prepare('SELECT count(*) FROM entries').pluck().get() as number;
  } finally {
    sqlite.close();
  }
}

describe('a chain read by the services extends the one the views verified', () => {
  it('a committed refund’s chain removed while the server runs: the request sent again a day later is refused 503, and Stripe is not asked twice', async () => {
    world = await buildAppWorld();
    const pi = await world.payment(5_000);
    const body = { request_id: 'case-removed', payment_intent: pi, amount: 2_000 };
    const first = await world.agent('POST', '/v1/refunds', body);
    expect(first.json()).toMatchObject({ status: 'COMMITTED' });
    const effectId: string = first.json().effect_id;
    await world.services.views.current();

    // The chain goes, its seals stay: nothing but the chain's own rows changed.
    behindTheServer(world.dir, (sqlite) => sqlite.prepare('DELETE FROM entries WHERE effect_id = ?').run(effectId));
    const left = rowCount(world.dir);
    // Past Stripe's idempotency window, a resend that looked new would be a second refund.
    world.clock.advance(DAY_MS + 60_000);
    const again = await world.agent('POST', '/v1/refunds', body);
    expect(again.statusCode).toBe(503);
    expect(again.json().error.code).toBe('journal_unavailable');
    expect(world.sandbox.refunds(pi)).toHaveLength(1);
    expect(rowCount(world.dir)).toBe(left);
  });

  it('the services’ own read of a chain removed under the running server fails closed, and the views become unavailable', async () => {
    world = await buildAppWorld();
    const pi = await world.payment(5_000);
    const first = await world.agent('POST', '/v1/refunds', { request_id: 'case-read', payment_intent: pi, amount: 2_000 });
    const effectId: string = first.json().effect_id;
    await world.services.views.current();
    behindTheServer(world.dir, (sqlite) => sqlite.prepare('DELETE FROM entries WHERE effect_id = ?').run(effectId));
    await expect(world.services.journal.entries(effectId)).rejects.toThrow(/no longer the entry the views verified/);
    expect(world.services.views.unavailable?.corrupt.effectId).toBe(effectId);
  });

  it('a chain rewritten under the running server with hashes that hold is refused to a send’s check as well', async () => {
    world = await buildAppWorld();
    const pi = await world.payment(5_000);
    const first = await world.agent('POST', '/v1/refunds', { request_id: 'case-rewritten', payment_intent: pi, amount: 2_000 });
    const effectId: string = first.json().effect_id;
    await world.services.views.current();
    // Only the chain's first entry stays, the rest cut: every hash and link of what is left holds.
    behindTheServer(world.dir, (sqlite) => sqlite.prepare('DELETE FROM entries WHERE effect_id = ? AND prev IS NOT NULL').run(effectId));
    const appended = world.services.journal.appendIf('REFUSED', effectId, () => null, fields('REFUSED'));
    await expect(appended).rejects.toThrow(/no longer the entry the views verified/);
    expect(world.services.views.unavailable).not.toBeNull();
  });
});
