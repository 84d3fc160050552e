import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../server/config/load.ts';
import { latestEscalation } from '../../server/journal/chain.ts';
import { chainState } from '../../server/inbox/state.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';
import { withoutPerson, writeTestConfig } from '../support/server-process.ts';

// A reload that removes the first approver of a four-eyes item approved but not yet sent: the
// approval it was sent under is two people's, so it lapses as approver_removed at the reload, as
// a one-approver item's does, and goes back to people.

describe('config reload and a four-eyes approval not yet sent', () => {
  let dir: string;
  let path: string;
  let world: AppWorld;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-reload-four-eyes-'));
    path = writeTestConfig(dir, { unpaced: true });
    const text = readFileSync(path, 'utf8')
      .replace(/^( {2}- \{ name: default, chain: \[ap-leads, finance-manager\], sla_minutes: 240) \}$/m, '$1, two_approvers_from: { usd: 10000 } }')
      .replace(/^ {2}ap-leads: \[ana, bea\]$/m, '  ap-leads: [ana, bea, cy]')
      .replace(/^ {2}finance-manager: \[fm\]$/m, '  finance-manager: [fm, cy]');
    writeFileSync(path, text);
    const loaded = loadConfigFile(path);
    world = await buildAppWorld({ config: loaded.config, configSha256: loaded.sha256 });
  });
  afterAll(async () => {
    await world.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the first approver removed: the approval lapses at the reload and the item is back with ap-leads, saying why', async () => {
    const pi = await world.payment(20_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: 'reload-four-eyes', payment_intent: pi, amount: 15_000 });
    const effectId = posted.json().effect_id as string;
    expect(await world.services.inbox.approve(effectId, 'ana')).toBe('PARTLY_APPROVED');
    expect(await world.services.inbox.approve(effectId, 'bea', { execute: false })).toBe('APPROVED');
    writeFileSync(path, withoutPerson(readFileSync(path, 'utf8'), 'ana'));
    expect(await world.reload(() => loadConfigFile(path))).toMatchObject({ outcome: 'reloaded', lapsed: { [effectId]: 'REFUSED:lease' } });
    const chain = await world.services.journal.entries(effectId);
    expect(chainState(chain)).toBe('ESCALATED');
    expect(latestEscalation(chain).escalation).toMatchObject({ reason: 'approver_removed', routed_to: ['bea', 'cy'], approvals_required: 2 });
    expect(world.sandbox.refunds().filter((refund) => refund.payment_intent === pi)).toEqual([]);
  });
});
