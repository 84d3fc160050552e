import { generateKeyPairSync } from 'node:crypto';
import { type Entry, MESSAGE_KINDS } from '../../shared/entries.ts';
import { isJsonObject, type Json } from '../../shared/json.ts';
import { InboxProjection } from '../../server/inbox/projection.ts';
import type { InboxView } from '../../server/inbox/view.ts';
import { boundRequest, chainState, ownedBy } from '../../server/inbox/state.ts';
import { allOf, approvalsOf, approvalsRequired, has, isOpenDispatch } from '../../server/journal/chain.ts';
import { approvalsIn, isPersonLease } from '../../server/gate/leases.ts';
import { canonical, sha256Hex } from '../../server/journal/hash.ts';
import { keyIdFor, type SigningKey } from '../../server/receipts/keys.ts';
import { signReceipt } from '../../server/receipts/receipts.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { ScoreboardProjection } from '../../server/scoreboard/projection.ts';
import { OutboxProjection } from '../../server/outbox/projection.ts';
import { checkOutbox, outboxViews } from './outbox-invariants.ts';
import { checkRateLimits } from './rate-limit-invariants.ts';
import { checkRequestIds } from './request-id-invariants.ts';
import { allEntries } from './sim-journal.ts';
import { caughtUp } from './process.ts';
import { CONFIG, type World } from './world.ts';
import { type Roster, rosterChanges } from '../../server/config/config-at-start.ts';

/** The test key receipts are signed with. */
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const SIGNING_KEY: SigningKey = { keyId: keyIdFor(publicKey), privateKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
/** The same key imported once by WebCrypto, so a seed's hundreds of receipts do not each re-read the PEM. */
const VERIFY_KEY = await crypto.subtle.importKey('spki', publicKey.export({ type: 'spki', format: 'der' }), { name: 'Ed25519' }, false, ['verify']);

const MESSAGE_KIND_SET: ReadonlySet<string> = new Set(MESSAGE_KINDS);

/** What a seed's journal came to. */
export interface JournalSummary {
  /** SHA-256 of every entry hash, in journal order: equal for two runs of one seed. */
  hash: string;
  entries: number;
  /** The journal's chains by effect id, for `checkReceipts`. */
  chains: ReadonlyMap<string, Entry[]>;
}

/**
 * Check every invariant over the settled world but the receipts; violations go to
 * `world.violations`. The receipts are checked by `checkReceipts`, outside `world.run`.
 */
export async function checkInvariants(world: World): Promise<JournalSummary> {
  const entries = await allEntries(world.journal);
  const chains = new Map<string, Entry[]>();
  for (const entry of entries) {
    const chain = chains.get(entry.effect_id);
    if (chain) chain.push(entry);
    else chains.set(entry.effect_id, [entry]);
  }
  checkLedger(world, chains);
  checkNothingStranded(world, chains);
  checkReshows(world, chains);
  checkApprovals(world, chains);
  checkRateLimits(world, chains);
  checkOutbox(world, chains);
  checkRequestIds(world, chains);
  checkReloads(world, entries);
  await checkViews(world, entries);
  return { hash: sha256Hex(entries.map((e) => e.hash).join('\n')), entries: entries.length, chains };
}

/**
 * Read in journal order, the config reloads say who was in which group when: no refund is sent
 * under the approval of someone a reload had taken out of the group it was given in (invariant 5
 * as a rebuild sees it, from the journal alone).
 */
function checkReloads(world: World, entries: readonly Entry[]): void {
  let groups = new Map(Object.entries(CONFIG.groups).map(([group, members]) => [group, new Set(members)]));
  let roster: Roster | null = null;
  for (const entry of entries) {
    if (entry.kind === 'CONFIG') {
      world.hit(entry.cause === 'start' ? 'check.config_at_start' : 'check.reload');
      for (const { group, name } of entry.left) groups.get(group)?.delete(name);
      for (const { group, name } of entry.joined) groups.get(group)?.add(name);
      const next = entry.people !== undefined && entry.members !== undefined ? { people: entry.people, members: entry.members } : null;
      // Who came and went is what the roster it was compared with and its own differ by.
      if (next !== null && roster !== null && entry.compared_with !== null && entry.compared_with !== undefined) {
        const said = { peopleAdded: entry.people_added, peopleRemoved: entry.people_removed, joined: entry.joined, left: entry.left };
        if (canonical(rosterChanges(roster, next)) !== canonical(said)) world.violation(`CONFIG at ${entry.at_ms} names changes its roster and the one before it do not differ by: ${canonical(said)}`);
      }
      // From a roster on, the groups are what it says.
      if (next !== null) {
        groups = new Map(Object.keys(CONFIG.groups).map((group) => [group, new Set(next.members.filter((m) => m.group === group).map((m) => m.name))]));
        roster = next;
      }
    }
    if (entry.kind !== 'DISPATCHED' || !isPersonLease(entry.lease)) continue;
    if (!groups.get(entry.lease.group)?.has(entry.lease.by)) {
      world.violation(`no send under an approval a reload took away: ${entry.effect_id} was dispatched under ${entry.lease.by} of ${entry.lease.group}, out of it since a CONFIG entry`);
    }
  }
}

/**
 * An ESCALATED written while the one before it is unanswered and that is no breach is the same
 * item shown again (on new facts): it keeps the group, level and deadline (the SLA clock runs
 * on), and never repeats the facts it replaces.
 */
function checkReshows(world: World, chains: ReadonlyMap<string, Entry[]>): void {
  for (const [effectId, chain] of chains) {
    let shown: Entry | null = null;
    for (const entry of chain) {
      if (entry.kind === 'DECIDED') shown = null;
      if (entry.kind !== 'ESCALATED') continue;
      if (shown?.kind === 'ESCALATED' && !entry.breach) {
        world.hit('check.reshow');
        if (entry.group !== shown.group || entry.level !== shown.level || entry.due_ms !== shown.due_ms) {
          world.violation(`a re-show of ${effectId} moved it from ${shown.group} level ${shown.level} due ${shown.due_ms} to ${entry.group} level ${entry.level} due ${entry.due_ms}`);
        }
        if (canonical(entry.facts) === canonical(shown.facts)) world.violation(`${effectId} was shown again on the facts it already showed`);
      }
      shown = entry;
    }
  }
}

/** Never two refunds for one effect, never more refunded than paid, and the ledger and the journal agree. */
function checkLedger(world: World, chains: ReadonlyMap<string, Entry[]>): void {
  const byEffect = new Map<string, number>();
  for (const refund of world.target.refunds) {
    if (refund.effectId === null) continue;
    byEffect.set(refund.effectId, (byEffect.get(refund.effectId) ?? 0) + 1);
  }
  for (const [effectId, count] of byEffect) {
    if (count > 1) world.violation(`never two refunds for one effect: ${effectId} has ${count} refunds in the ledger`);
    const chain = chains.get(effectId) ?? [];
    const attested = chain.some((e) => e.kind === 'DISPATCHED' && attests(e.checks));
    if (!attested) world.violation(`no send without live authority and current facts: ${effectId} has a refund but no DISPATCHED whose checks show a live lease and no violations`);
    if (!has(chain, 'COMMITTED') && !has(chain, 'AMBIGUOUS') && !isOpenDispatch(chain)) {
      world.violation(`the journal holds what landed: ${effectId} has a refund but its chain is neither committed, ambiguous nor in flight`);
    }
  }
  for (const [paymentIntent, payment] of world.target.payments) {
    const refunded = world.target.refunds.filter((r) => r.paymentIntent === paymentIntent && r.status !== 'failed').reduce((sum, r) => sum + r.amountCents, 0);
    if (refunded > payment.amountCents) world.violation(`never more refunded than paid: ${paymentIntent} refunded ${refunded} of ${payment.amountCents}`);
  }
  for (const [effectId, chain] of chains) {
    const commit = chain.find((e) => e.kind === 'COMMITTED');
    if (!commit) continue;
    const dispatched = chain.findLast((e) => e.kind === 'DISPATCHED');
    const amount = isJsonObject(dispatched?.effect) ? dispatched.effect.amount : undefined;
    if (!world.target.refunds.some((r) => r.effectId === effectId && r.amountCents === amount)) {
      world.violation(`the ledger holds what was committed: ${effectId} is COMMITTED but the ledger has no refund of ${String(amount)} by it`);
    }
  }
}

/**
 * After the run settles (a restart with every claim lapsed, a ticker pass, no crashes or faults),
 * every request of the inbox rests: done, closed by a person, or in front of one. Nothing is left
 * new, approved and unsent, in flight, or owing an escalation nobody opened.
 */
function checkNothingStranded(world: World, chains: ReadonlyMap<string, Entry[]>): void {
  for (const [effectId, chain] of chains) {
    if (!ownedBy(chain, CONFIG.inboxName)) continue;
    const state = chainState(chain);
    world.hit(`settled.${state}`);
    if (state !== 'DONE' && state !== 'CLOSED' && state !== 'ESCALATED') {
      const request = boundRequest(chain);
      world.violation(`nothing is stranded: ${effectId} (${request?.id ?? 'no request'}) is left ${state} after the run settled`);
    }
  }
}

/** The checks a DISPATCHED recorded show a live lease and facts that held. */
function attests(checks: Json | undefined): boolean {
  return isJsonObject(checks) && checks.lease_live === true && Array.isArray(checks.violations) && checks.violations.length === 0;
}

/**
 * Every chain's receipt, signed with the test key, verifies. Called outside `world.run`: the
 * verifier hashes and checks signatures with WebCrypto, whose work finishes on other threads,
 * which the simulated scheduler (it runs only what it can wake) would take for a stuck task.
 */
export async function checkReceipts(world: World, chains: ReadonlyMap<string, Entry[]>): Promise<void> {
  // All at once: WebCrypto's hashing and signature checks run off the main thread, so they overlap.
  // A message chain is the outbox's record, no refund's: it has no receipt (and no item's receipt holds one, see checkOutbox); nor has the config's.
  const items = [...chains].filter(([, chain]) => chain[0]?.kind !== 'MESSAGE' && chain[0]?.kind !== 'CONFIG');
  const verified = items.map(async ([effectId, chain]) => ({ effectId, chain, report: await verifyReceipt(signReceipt(effectId, chain, SIGNING_KEY), VERIFY_KEY) }));
  for (const { effectId, chain, report } of await Promise.all(verified)) {
    world.hit('check.receipt');
    if (!report.valid) {
      const committed = has(chain, 'COMMITTED') ? 'committed ' : '';
      world.violation(`every receipt verifies: the ${committed}receipt of ${effectId} has ${report.problems.map((p) => p.code).join(', ')}`);
    }
  }
}

/** What the inbox's views show, as one comparable text per view. */
async function inboxViews(projection: InboxProjection | InboxView): Promise<Record<string, string>> {
  const groups = new Set(Object.keys(CONFIG.groups));
  const work = projection.work;
  const sorted = (ids: Iterable<string>) => [...ids].sort();
  const views: Record<string, unknown> = {
    queue: projection.queue(groups),
    done: await projection.history('done', groups, '', 1_000_000),
    closed: await projection.history('closed', groups, '', 1_000_000),
    unconfirmed: sorted(projection.unconfirmedSent()),
    owned: sorted(await projection.ownedIds()),
    due: sorted(work.due(Number.MAX_SAFE_INTEGER)),
    approved: sorted(work.approved()),
    unfinished: sorted(work.unfinished()),
    sending: sorted(work.sending()),
  };
  return Object.fromEntries(Object.entries(views).map(([name, view]) => [name, canonical(JSON.parse(JSON.stringify(view)) as Json)]));
}

/** Mid-run: the live views and scoreboard equal ones rebuilt from the journal as it is now. */
export async function auditViews(world: World): Promise<void> {
  const entries = await world.guarded('an audit read', () => allEntries(world.journal));
  if (entries) await checkViews(world, entries);
}

/** The live views equal views rebuilt from the whole journal, and the scoreboard equals a recomputation. */
async function checkViews(world: World, entries: readonly Entry[]): Promise<void> {
  const live = await caughtUp(world);
  if (live === undefined) return;
  const rebuilt = new InboxProjection(CONFIG.inboxName);
  const board = new ScoreboardProjection(CONFIG.inboxName);
  const outbox = new OutboxProjection();
  for (const entry of entries) {
    // As server/views/views.ts feeds them: the outbox sees every entry, the inbox and the scoreboard no message's.
    outbox.note(entry);
    if (MESSAGE_KIND_SET.has(entry.kind)) continue;
    rebuilt.apply(entry);
    board.note(entry);
  }
  const liveViews = await inboxViews(live.inbox);
  const rebuiltViews = await inboxViews(rebuilt);
  for (const [name, text] of Object.entries(rebuiltViews)) {
    world.hit('check.view');
    if (liveViews[name] !== text) world.violation(`the views after a rebuild equal the live views: ${name} differs (live ${clip(liveViews[name])}, rebuilt ${clip(text)})`);
  }
  const liveOutbox = await outboxViews(live.outbox);
  for (const [name, text] of Object.entries(await outboxViews(outbox))) {
    world.hit('check.view');
    if (liveOutbox[name] !== text) world.violation(`the outbox's views after a rebuild equal the live ones: ${name} differs (live ${clip(liveOutbox[name])}, rebuilt ${clip(text)})`);
  }
  const scoreboard = canonical((await live.scoreboard.board()) as unknown as Json);
  const recomputed = canonical(computeScoreboard(entries, CONFIG.inboxName) as unknown as Json);
  const rebuiltBoard = canonical((await board.board()) as unknown as Json);
  world.hit('check.scoreboard');
  if (scoreboard !== recomputed) world.violation(`the scoreboard equals a recomputation from the entries: live ${clip(scoreboard)}, computed ${clip(recomputed)}`);
  if (rebuiltBoard !== recomputed) world.violation(`a rebuilt scoreboard equals a recomputation: rebuilt ${clip(rebuiltBoard)}, computed ${clip(recomputed)}`);
}

function clip(text: string | undefined, max = 300): string {
  if (text === undefined) return 'nothing';
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * Four-eyes and no self-approval: every send under a person's approval of an escalation that needs
 * two carries that many distinct people's recorded approvals of it, attested live when it was
 * sent; and no approval or accepted repair of a refund is by the person it benefits (its `on_behalf_of`).
 */
function checkApprovals(world: World, chains: ReadonlyMap<string, Entry[]>): void {
  for (const [effectId, chain] of chains) {
    const request = boundRequest(chain);
    const beneficiary = typeof request?.on_behalf_of === 'string' ? request.on_behalf_of.toLowerCase() : null;
    for (const entry of chain) {
      if (entry.kind === 'DECIDED' && (entry.decision === 'approve' || entry.decision === 'repair') && beneficiary !== null && entry.by.toLowerCase() === beneficiary) {
        world.violation(`${effectId} was approved by ${entry.by}, the person it benefits`);
      }
      if (entry.kind !== 'DISPATCHED' || !isPersonLease(entry.lease)) continue;
      world.hit('check.four_eyes_send');
      const escalation = allOf(chain, 'ESCALATED').find((e) => e.hash === (entry.lease as { escalation: string }).escalation);
      if (!escalation) continue;
      const needed = approvalsRequired(escalation);
      const approvals = approvalsIn(entry.lease);
      const people = new Set(approvals.map((a) => a.by));
      const recorded = approvalsOf(chain, escalation);
      const allRecorded = approvals.every((a) => recorded.some((r) => r.by === a.by && r.at_ms === a.at_ms));
      if (people.size < needed || !allRecorded || people.size !== approvals.length) {
        world.violation(`${effectId} was sent under ${approvals.length} approval(s) by ${[...people].join(', ')} of an escalation that needs ${needed} distinct recorded ones`);
      }
      if (needed > 1) world.hit('check.four_eyes_two');
      if (!entry.checks.lease_live) world.violation(`${effectId} was sent under approvals not attested live`);
    }
  }
}
