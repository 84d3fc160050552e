import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_CHAIN_ID } from '../../shared/entries.ts';
import { loadConfigFile } from '../../server/config/load.ts';
import { PUBLISHED_PASSWORD_HASHES } from '../../server/config/published-secrets.ts';
import { latestEscalation } from '../../server/journal/chain.ts';
import { chainState } from '../../server/inbox/state.ts';
import { hashPassword } from '../../server/config/secrets.ts';
import { type AppWorld, buildAppWorld, DEMO_PASSWORD } from '../support/app-world.ts';
import { withOwnSecrets, withoutPerson, writeTestConfig } from '../support/server-process.ts';

// The config reloaded while running, in process: what a reload journals, whose sessions and
// approvals end, what it refuses, and that open items keep the route they were routed with.

const MINUTE_MS = 60_000;

describe('config reload', () => {
  let dir: string;
  let path: string;
  let world: AppWorld;
  const reload = () => world.reload(() => loadConfigFile(path));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-reload-'));
    path = writeTestConfig(dir, { unpaced: true });
    const loaded = loadConfigFile(path);
    world = await buildAppWorld({ config: loaded.config, configSha256: loaded.sha256 });
  });
  afterAll(async () => {
    await world.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function queued(requestId: string, amountCents = 8_000): Promise<{ pi: string; effectId: string }> {
    const pi = await world.payment(10_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: amountCents });
    expect(posted.json().status).toBe('QUEUED');
    return { pi, effectId: posted.json().effect_id as string };
  }

  it('the same file again changes nothing and journals nothing', async () => {
    const entries = await world.entryCount();
    expect(await reload()).toMatchObject({ outcome: 'unchanged' });
    expect(await world.entryCount()).toBe(entries);
  });

  it('a person removed: journaled with the file hash first, their sessions end, their unsent approval lapses as approver_removed', async () => {
    const bea = await world.login('bea');
    const { pi, effectId } = await queued('reload-bea');
    expect(await world.services.inbox.approve(effectId, 'bea', { execute: false })).toBe('APPROVED');
    const before = readFileSync(path, 'utf8');
    writeFileSync(path, withoutPerson(before, 'bea'));
    const outcome = await reload();
    expect(outcome).toMatchObject({
      outcome: 'reloaded',
      sha256: createHash('sha256').update(readFileSync(path)).digest('hex'),
      changes: { peopleRemoved: ['bea'], left: [{ group: 'ap-leads', name: 'bea' }], peopleAdded: [], joined: [] },
      sessionsEnded: 1,
      lapsed: { [effectId]: 'REFUSED:lease' },
    });
    // The journal says so, on the config's own chain.
    // The start named the file it started on; the reload names who left since it, and everyone in force now.
    const [started, reloaded] = await world.services.journal.entries(CONFIG_CHAIN_ID);
    expect(started).toMatchObject({ kind: 'CONFIG', cause: 'start', sha256: createHash('sha256').update(before).digest('hex'), compared_with: null });
    expect(reloaded).toMatchObject({
      kind: 'CONFIG',
      cause: 'reload',
      compared_with: started!.kind === 'CONFIG' ? started!.sha256 : '',
      people_removed: ['bea'],
      left: [{ group: 'ap-leads', name: 'bea' }],
      people: expect.not.arrayContaining(['bea']),
      members: expect.not.arrayContaining([{ group: 'ap-leads', name: 'bea' }]),
    });
    // Her session is over, and she cannot sign in again.
    expect((await world.as(bea, 'GET', '/api/inbox')).statusCode).toBe(401);
    expect((await world.app.inject({ method: 'POST', url: '/api/session', payload: { name: 'bea', password: 'interlock-demo' } })).statusCode).toBe(401);
    // Her approval was never sent: the item is back in front of ap-leads, saying why.
    const chain = await world.services.journal.entries(effectId);
    expect(chainState(chain)).toBe('ESCALATED');
    expect(latestEscalation(chain).escalation).toMatchObject({ reason: 'approver_removed', group: 'ap-leads', routed_to: ['ana'] });
    expect(world.sandbox.refunds().filter((refund) => refund.payment_intent === pi)).toEqual([]);
    // The views and the journal agree: the directory no longer names her.
    const ana = await world.login('ana');
    const people = (await world.as(ana, 'GET', '/api/directory')).json().people.map((p: { name: string }) => p.name);
    expect(people).not.toContain('bea');
    expect((await world.services.views.current()).configReloads.latest()).toMatchObject({ sha256: outcome.outcome === 'reloaded' ? outcome.sha256 : '', peopleRemoved: ['bea'] });
  });

  it('a file that fails the start checks is refused whole, and the config in force stays', async () => {
    const inForce = world.services.config;
    const entries = await world.entryCount();
    const good = readFileSync(path, 'utf8');
    writeFileSync(path, good.replace('ap-leads: [ana]', 'ap-leads: [ana, nobody]'));
    const unknown = await reload();
    expect(unknown).toMatchObject({ outcome: 'refused' });
    expect(unknown.outcome === 'refused' && unknown.why).toMatch(/groups\.ap-leads.*nobody/);
    writeFileSync(path, good.replace(/^stripe: .*$/m, 'stripe: { mode: sandbox }'));
    expect(await reload()).toEqual({ outcome: 'refused', why: 'stripe change only with a restart; nothing was changed' });
    writeFileSync(path, `${good}\n  oops: [`);
    expect(await reload()).toMatchObject({ outcome: 'refused', why: expect.stringMatching(/YAML syntax/) });
    expect(world.services.config).toBe(inForce);
    expect(await world.entryCount()).toBe(entries);
    writeFileSync(path, good);
  });

  it('an open item keeps the chain and SLA it was routed with when its route changes; new items take the new route', async () => {
    const { effectId } = await queued('reload-route-before');
    const routedBefore = latestEscalation(await world.services.journal.entries(effectId)).escalation!;
    expect(routedBefore.routing).toEqual({ chain: ['ap-leads', 'finance-manager'], sla_ms: 240 * MINUTE_MS });
    const good = readFileSync(path, 'utf8');
    writeFileSync(path, good.replace('{ name: default, chain: [ap-leads, finance-manager], sla_minutes: 240 }', '{ name: default, chain: [ap-leads, controller], sla_minutes: 5 }'));
    expect(await reload()).toMatchObject({ outcome: 'reloaded', changes: { routesChanged: ['default'] } });
    world.clock.advance(10 * MINUTE_MS);
    await world.services.inbox.tick();
    expect(latestEscalation(await world.services.journal.entries(effectId)).escalation!.hash).toBe(routedBefore.hash);
    const { effectId: after } = await queued('reload-route-after');
    expect(latestEscalation(await world.services.journal.entries(after)).escalation!.routing).toEqual({ chain: ['ap-leads', 'controller'], sla_ms: 5 * MINUTE_MS });
  });
});

describe('config reload outside the sandbox', () => {
  it('refuses a published demo secret as the start does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-reload-test-mode-'));
    const path = join(dir, 'interlock.yaml');
    const own = withOwnSecrets(readFileSync(writeTestConfig(dir, { unpaced: true }), 'utf8')).replace(/^stripe: \{ mode: sandbox,/m, 'stripe: { mode: test,');
    writeFileSync(path, own);
    const loaded = loadConfigFile(path);
    expect(loaded.config.stripe.mode).toBe('test');
    const world = await buildAppWorld({ config: loaded.config, configSha256: loaded.sha256 });
    try {
      const annasOwn = /^ {4}password: "(.*)"$/m.exec(own)![1]!;
      writeFileSync(path, own.replace(annasOwn, PUBLISHED_PASSWORD_HASHES[0]!));
      const outcome = await world.reload(() => loadConfigFile(path));
      expect(outcome.outcome === 'refused' && outcome.why).toMatch(/people\[0\]\.password: ana still has the demo password/);
      expect(world.services.config).toBe(loaded.config);
      // The demo password under a fresh salt is refused the same way: the hash is checked against the password.
      writeFileSync(path, own.replace(annasOwn, await hashPassword(DEMO_PASSWORD)));
      const resalted = await world.reload(() => loadConfigFile(path));
      expect(resalted.outcome === 'refused' && resalted.why).toMatch(/people\[0\]\.password: ana has a password hash of the demo password/);
      expect(world.services.config).toBe(loaded.config);
    } finally {
      await world.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('config reload and a four-eyes approval not sent yet', () => {
  let dir: string;
  let path: string;
  let world: AppWorld;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-reload-four-eyes-'));
    path = writeTestConfig(dir, { unpaced: true });
    const fourEyes = readFileSync(path, 'utf8')
      .replace('{ name: default, chain: [ap-leads, finance-manager], sla_minutes: 240 }', '{ name: default, chain: [ap-leads, finance-manager], sla_minutes: 240, two_approvers_from: { usd: 5000 } }')
      .replace('finance-manager: [fm]', 'finance-manager: [fm, cy]');
    writeFileSync(path, fourEyes);
    const loaded = loadConfigFile(path);
    world = await buildAppWorld({ config: loaded.config, configSha256: loaded.sha256 });
  });
  afterAll(async () => {
    await world.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lapses at once when its first approver leaves the group, though the second stays', async () => {
    const pi = await world.payment(10_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: 'reload-four-eyes', payment_intent: pi, amount: 8_000 });
    const effectId = posted.json().effect_id as string;
    expect(await world.services.inbox.approve(effectId, 'ana', { execute: false })).toBe('PARTLY_APPROVED');
    expect(await world.services.inbox.approve(effectId, 'bea', { execute: false })).toBe('APPROVED');
    // Ana leaves ap-leads (cy takes her place, so the route still has two to ask).
    writeFileSync(path, readFileSync(path, 'utf8').replace('ap-leads: [ana, bea]', 'ap-leads: [bea, cy]'));
    const outcome = await world.reload(() => loadConfigFile(path));
    expect(outcome).toMatchObject({ outcome: 'reloaded', changes: { left: [{ group: 'ap-leads', name: 'ana' }] }, lapsed: { [effectId]: 'REFUSED:lease' } });
    const chain = await world.services.journal.entries(effectId);
    expect(chainState(chain)).toBe('ESCALATED');
    expect(latestEscalation(chain).escalation).toMatchObject({ reason: 'approver_removed', group: 'ap-leads' });
    expect(world.sandbox.refunds().filter((refund) => refund.payment_intent === pi)).toEqual([]);
  });
});
