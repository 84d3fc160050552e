import { CONFIG_CHAIN_ID, type Membership } from '../../shared/entries.ts';
import { configEntryFields, rosterChanges } from '../../server/config/config-at-start.ts';
import { canonical } from '../../server/journal/hash.ts';
import { approvalsOf, latestEscalation } from '../../server/journal/chain.ts';
import { jsonEqual, plain } from '../../shared/json.ts';
import type { Status } from '../../shared/statuses.ts';
import type { InboxRequest } from '../../server/inbox/inbox.ts';
import { childIdFor } from '../../server/inbox/inbox.ts';
import { currentStatus } from '../../server/refunds/answers.ts';
import { boundRequest } from '../../server/inbox/state.ts';
import { caughtUp, createProcess, type Process, tickerPass } from './process.ts';
import { LIMITS } from './oracle.ts';
import { askAsAgent } from './rate-limits.ts';
import { AGENT, CONFIG, type World } from './world.ts';

/** Agents: new requests, identical retries, re-decided payloads under a used id, and bursts on one payment. */

/**
 * The currencies payments are made in, each with about how many of its smallest unit a US cent is
 * worth: dollars and euros (two decimals), yen and won (none), dinars (three). The shipped rules
 * name a limit in USD, EUR and JPY only, so a refund in won or dinars always needs a person.
 */
const CURRENCIES: readonly { currency: string; perCent: number; weight: number }[] = [
  { currency: 'usd', perCent: 1, weight: 6 },
  { currency: 'eur', perCent: 1, weight: 1 },
  { currency: 'jpy', perCent: 1.5, weight: 2 },
  { currency: 'krw', perCent: 13.5, weight: 1 },
  { currency: 'kwd', perCent: 3.1, weight: 1 },
];
const CURRENCY_WEIGHT = CURRENCIES.reduce((sum, c) => sum + c.weight, 0);

/** A currency for a new payment, by weight. */
function pickCurrency(world: World): (typeof CURRENCIES)[number] {
  let roll = world.rng.random() * CURRENCY_WEIGHT;
  for (const entry of CURRENCIES) {
    roll -= entry.weight;
    if (roll < 0) return entry;
  }
  return CURRENCIES[0]!;
}

/** An amount worth about `cents` US cents, in the smallest unit of `currency`. */
function inCurrency(cents: number, currency: string): number {
  const perCent = CURRENCIES.find((c) => c.currency === currency)?.perCent ?? 1;
  return Math.max(1, Math.round(cents * perCent));
}

/** A payment to refund: a known one, or a new one while there are few, in a currency drawn for it. */
export function pickPayment(world: World): string {
  if (world.paymentIds.length === 0 || (world.paymentIds.length < 5 && world.chance(0.25))) {
    const id = `pi_sim${world.paymentIds.length + 1}`;
    const { currency } = pickCurrency(world);
    world.hit(`currency.${currency}`);
    world.target.addPayment(id, inCurrency(world.rng.randint(20, 400) * 100, currency), currency);
    world.paymentIds.push(id);
    return id;
  }
  return world.pick(world.paymentIds);
}

/**
 * An amount as agents ask, in the payment's currency: mostly one the rules clear, some for a
 * person, a few for the large route; now and then just over the limit in that currency.
 */
function askAmount(world: World, paymentIntent: string): number {
  const currency = world.target.payments.get(paymentIntent)?.currency ?? 'usd';
  const roll = world.rng.random();
  if (roll < 0.5) return inCurrency(world.rng.randint(5, 50) * 100, currency);
  if (roll < 0.55) return (LIMITS[currency] ?? 5_000) + world.rng.randint(0, 1);
  if (roll < 0.85) return inCurrency(world.rng.randint(51, 200) * 100, currency);
  return inCurrency(world.rng.randint(201, 450) * 100, currency);
}

/** A new request, as the agents' API binds it (flags a sorted set, a reason only when given). */
export function newRequest(world: World, paymentIntent = pickPayment(world)): InboxRequest {
  world.requestCount += 1;
  const roll = world.rng.random();
  const flags = roll < 0.1 ? ['fraud_review'] : roll < 0.15 ? ['vip'] : [];
  return {
    id: `req-${world.requestCount}`,
    agent: AGENT,
    payment_intent: paymentIntent,
    amount: askAmount(world, paymentIntent),
    ...(world.chance(0.3) ? { reason: 'arrived damaged' } : {}),
    flags,
    // Now and then for the benefit of an approver, who may then not approve it (the same roll, no new draw).
    ...(roll >= 0.15 && roll < 0.25 ? { on_behalf_of: 'bea' } : {}),
  };
}

/**
 * Submit as the agent does and judge the answer: a landed answer is backed by the ledger; a
 * conflict is answered only for another payload than the one bound, and leaves no trace of it.
 * With `redecided`, the id was already bound to another payload: the chain must not change.
 */
export async function submitAsAgent(world: World, request: InboxRequest, redecided = false, p: Process = world.process): Promise<Status | undefined> {
  const effectId = p.inbox.effectIdOf(request);
  const before = world.journal.chainNow(effectId);
  const status = await world.guarded(`submit of ${request.id}`, () => askAsAgent(world, p, request));
  if (status === undefined) return undefined;
  world.hit(`answer.${status.startsWith('REFUSED') || status.startsWith('UNRESOLVED') ? status : status.split(':')[0]}`);
  world.checkLanded(`submit of ${request.id}`, effectId, status, request.amount as number);
  const after = world.journal.chainNow(effectId);
  const bound = boundRequest(after);
  if (status === 'REFUSED:conflicting_payload') {
    if (bound === null || jsonEqual(plain(bound), plain(request))) {
      world.violation(`${request.id} was refused as a conflicting payload, but the payload bound is the one offered`);
    }
    if (after.some((e) => e.kind === 'PROPOSED' && jsonEqual(e.request ?? null, plain(request)))) {
      world.violation(`${request.id}: a payload refused as conflicting left a PROPOSED in the chain`);
    }
  }
  const boundBefore = boundRequest(before);
  if (redecided && boundBefore !== null && !jsonEqual(plain(boundBefore), plain(request))) {
    world.hit('check.reused_id');
    if (status !== 'REFUSED:conflicting_payload') world.violation(`${request.id} re-decided under a used id was answered ${status}, not REFUSED:conflicting_payload`);
    if (canonical(after) !== canonical(before)) world.violation(`a reused id with another payload changed the chain of ${request.id} (${before.length} entries, now ${after.length})`);
  }
  return status;
}

export async function agentNew(world: World): Promise<void> {
  const request = newRequest(world);
  world.requests.push(request);
  await submitAsAgent(world, request);
}

export async function agentDuplicate(world: World): Promise<void> {
  if (world.requests.length === 0) return agentNew(world);
  await submitAsAgent(world, { ...world.pick(world.requests) });
}

/**
 * The agent asks where its request stands (GET /v1/refunds/:request_id, answered from the journal
 * alone): an answer that says it landed must be backed by the ledger.
 */
export async function agentPoll(world: World): Promise<void> {
  if (world.requests.length === 0) return agentNew(world);
  const request = world.pick(world.requests);
  const effectId = world.process.inbox.effectIdOf(request);
  const chain = world.journal.chainNow(effectId);
  const bound = boundRequest(chain);
  if (bound === null) return;
  const status = currentStatus(chain);
  world.hit(`answer.poll.${status}`);
  world.checkLanded(`the status of ${request.id}`, effectId, status, bound.amount);
}

/** The model re-decides: the same request id with another amount, or other flags. */
export async function agentRedecide(world: World): Promise<void> {
  if (world.requests.length === 0) return agentNew(world);
  const used = world.pick(world.requests);
  // Another amount the agents' API accepts (it refuses anything under a cent before the inbox is asked).
  const amount = (used.amount as number) + world.pick([-100, 100, 1000]);
  const other = world.chance(0.7)
    ? { ...used, amount: amount > 0 ? amount : (used.amount as number) + 100 }
    : { ...used, flags: Array.isArray(used.flags) && used.flags.length > 0 ? [] : ['vip'] };
  await submitAsAgent(world, other, true);
}

/**
 * Several requests on one payment at once, started without awaiting each: new ones, an identical
 * retry racing its original, and two first requests under one id with other amounts. Half the
 * bursts are shared with a second server on the same journal, whose gate takes no turns with this
 * one's: only the journal's reservation guard keeps their dispatches on one payment apart. If the
 * second server dies, its claims lapse and this one's recovery settles what it left.
 */
export async function agentConcurrent(world: World, race: { effectId: string } | null = null): Promise<void> {
  // Often on the payment of an approval not yet sent, with the ticker sending it at the same time.
  const approved = (await caughtUp(world))?.inbox.work.approved() ?? [];
  const withApproval = race
    ? boundRequest(world.journal.chainNow(race.effectId))
    : approved.length > 0 && world.chance(0.5)
      ? boundRequest(world.journal.chainNow(world.pick(approved)))
      : null;
  if (withApproval) world.hit('agent.concurrent.with_approval');
  const paymentIntent = withApproval?.payment_intent ?? pickPayment(world);
  // Contended: each would clear the rules alone, and together they ask more than is left.
  const left = leftCents(world, paymentIntent);
  const contended = left >= 200 && world.chance(0.5);
  if (contended) world.hit('agent.concurrent.contended');
  const burst: InboxRequest[] = [];
  const size = world.rng.randint(2, 4);
  while (burst.length < size) {
    const last = burst.at(-1);
    const roll = world.rng.random();
    if (last && roll < 0.2) {
      world.hit('agent.concurrent.identical');
      burst.push({ ...last });
    } else if (last && roll < 0.35) {
      world.hit('agent.concurrent.conflicting_first');
      burst.push({ ...last, amount: (last.amount as number) + 100 });
    } else {
      const request = newRequest(world, paymentIntent);
      if (contended) request.amount = Math.max(100, Math.min(5000, Math.round((left * world.rng.uniform(0.35, 0.8)) / 100) * 100));
      burst.push(request);
    }
  }
  world.requests.push(...burst);
  const peer = world.chance(0.5) ? createProcess(world) : null;
  if (peer) world.hit('agent.concurrent.two_servers');
  const server = () => (peer && world.chance(0.5) ? peer : world.process);
  const ticker = withApproval || world.chance(0.15) ? [tickerPass(world)] : [];
  await Promise.all([...burst.map((request) => submitAsAgent(world, request, false, server())), ...ticker]);
  if (peer?.life.dead) world.hit('restart.second_server_died');
}

/**
 * An approval recorded and not yet sent is about to expire: the clock stands a moment before its
 * expiry while the ticker sends it and other refunds on its payment hold the payment's turn, so
 * it may expire between the gate's checks and its DISPATCHED.
 */
export async function raceApprovalExpiry(world: World): Promise<void> {
  const approved = (await caughtUp(world))?.inbox.work.approved() ?? [];
  if (approved.length === 0 || CONFIG.approvalMaxAgeMs === null) return;
  const effectId = world.pick(approved);
  const decision = world.journal.chainNow(effectId).findLast((e) => e.kind === 'DECIDED' && e.decision === 'approve');
  if (decision?.kind !== 'DECIDED') return;
  world.hit('race.approval_expiry.armed');
  world.clock.wallMs = Math.max(world.clock.wallMs, decision.at_ms + CONFIG.approvalMaxAgeMs - world.rng.randint(0, 3_000));
  await agentConcurrent(world, { effectId });
}

/** People in the inbox: approve, approve now and send later, reject, repair, or decide from a stale tab. */

export async function approverDecide(world: World): Promise<void> {
  const p = world.process;
  const views = await caughtUp(world, p);
  if (views === undefined) return;
  const items = views.inbox.queue(new Set(Object.keys(world.groups)));
  if (items.length === 0) {
    world.hit('approver.idle');
    return;
  }
  const item = world.pick(items);
  const members = world.groups[item.group] ?? [];
  const outsiders = Object.values(world.groups)
    .flat()
    .concat(world.removed.map((r) => r.person))
    .filter((name) => !members.includes(name));
  const outsider = members.length === 0 || (outsiders.length > 0 && world.chance(0.08));
  // Someone who approved this escalation already mostly leaves it to a colleague (four-eyes), now and then clicks again.
  const shown = latestEscalation(world.journal.chainNow(item.effect_id)).escalation;
  const approvedIt = shown ? approvalsOf(world.journal.chainNow(item.effect_id), shown).map((a) => a.by) : [];
  const others = members.filter((m) => !approvedIt.includes(m));
  const insider = approvedIt.length > 0 && others.length > 0 && !world.chance(0.1) ? others : members;
  const by = outsider ? world.pick(outsiders.length > 0 ? outsiders : ['nobody']) : world.pick(insider);
  const facts = item.facts;
  const amount = item.request.amount;
  const fits = typeof facts.amount_received === 'number' && typeof facts.refunded_by_others === 'number' && amount <= facts.amount_received - facts.refunded_by_others;
  // People approve only what fits the facts they see (Stripe refuses the rest), sometimes a disputed one.
  let action: 'approve' | 'approve_later' | 'reject' | 'repair';
  if (item.reason === 'ambiguous') action = world.chance(0.3) ? 'approve' : 'reject';
  else if (item.repairs.length > 0 && (!fits || world.chance(0.35))) action = 'repair';
  else if (!fits) action = 'reject';
  else if (facts.disputed === true) action = world.chance(0.3) ? 'approve' : 'reject';
  else action = world.pick(['approve', 'approve', 'approve_later', 'approve_later', 'reject']);
  world.hit(`approver.${outsider ? 'outsider' : action}`);
  const seen = item.escalation;
  const before = world.journal.chainNow(item.effect_id);
  const what = `${action} of ${item.request.id} by ${by}`;
  let status: Status | undefined;
  let landedAs = { effectId: item.effect_id, amount };
  if (action === 'approve' || action === 'approve_later') {
    status = await world.guarded(what, () => p.inbox.approve(item.effect_id, by, { seen, ...(action === 'approve_later' ? { execute: false } : {}) }));
  } else if (action === 'reject') {
    status = await world.guarded(what, () => p.inbox.reject(item.effect_id, by, { seen }));
  } else {
    const index = world.rng.randbelow(item.repairs.length);
    const set = item.repairs[index]?.set ?? {};
    if (typeof set.amount === 'number') {
      const child = { ...item.request, ...set, id: childIdFor(item.request.id, seen), repair_of: item.request.id } as InboxRequest;
      landedAs = { effectId: p.inbox.effectIdOf(child), amount: set.amount };
    }
    status = await world.guarded(what, () => p.inbox.repair(item.effect_id, by, index, { seen }));
  }
  if (status === undefined) return;
  world.hit(`answer.${status}`);
  world.checkLanded(what, landedAs.effectId, status, landedAs.amount);
  if (outsider) {
    world.hit('check.outsider');
    if (!['REFUSED:lease', 'ALREADY_DECIDED', 'SUPERSEDED', 'REFUSED:ambiguous'].includes(status)) world.violation(`${what}, who is not in ${item.group}, was answered ${status}`);
    if (canonical(world.journal.chainNow(item.effect_id)) !== canonical(before)) world.violation(`${what}, who is not in ${item.group}, changed the chain`);
  }
}

/** An approver's old tab decides an escalation that was superseded (moved up, or shown again): nothing may change. */
export async function approverStaleTab(world: World): Promise<void> {
  const p = world.process;
  const views = await caughtUp(world, p);
  if (views === undefined) return;
  const stale: Array<{ effectId: string; hash: string; group: string }> = [];
  for (const effectId of await views.inbox.ownedIds()) {
    const escalations = world.journal.chainNow(effectId).filter((e) => e.kind === 'ESCALATED');
    for (const e of escalations.slice(0, -1)) stale.push({ effectId, hash: e.hash, group: String(e.group) });
  }
  if (stale.length === 0) {
    world.hit('approver.stale_tab.none');
    return;
  }
  const tab = world.pick(stale);
  const members = world.groups[tab.group] ?? [];
  // Whoever left the tab open may since have left every group: they still click.
  const by = world.pick(members.length > 0 ? members : [...world.removed.map((r) => r.person), 'ana']);
  const before = world.journal.chainNow(tab.effectId);
  const reject = world.chance(0.3);
  const status = await world.guarded('a stale tab', () => (reject ? p.inbox.reject(tab.effectId, by, { seen: tab.hash }) : p.inbox.approve(tab.effectId, by, { seen: tab.hash })));
  if (status === undefined) return;
  world.hit('check.stale_tab');
  world.hit(`approver.stale_tab.${status}`);
  if (status !== 'SUPERSEDED' && status !== 'ALREADY_DECIDED') world.violation(`a stale tab deciding ${tab.effectId} was answered ${status}`);
  if (canonical(world.journal.chainNow(tab.effectId)) !== canonical(before)) world.violation(`a stale tab deciding ${tab.effectId} changed the chain`);
}

/**
 * The display cache finds an open item's payment moved (a hand refund, a dispute, another refund
 * on the payment): the inbox shows it again on facts it reads itself. Right after, a second call
 * on the same world must write nothing (once per change), and a re-show never moves the item's
 * group, level or deadline.
 */
export async function inboxReshow(world: World): Promise<void> {
  const p = world.process;
  const views = await caughtUp(world, p);
  if (views === undefined) return;
  const items = views.inbox.queue(new Set(Object.keys(world.groups)));
  if (items.length === 0) return;
  const item = world.pick(items);
  const reshown = await world.guarded(`re-show of ${item.request.id}`, () => p.inbox.reshowOnNewFacts(item.effect_id));
  if (reshown === undefined || reshown === null) {
    world.hit(`inbox.reshow.${reshown === null ? 'nothing_moved' : 'failed'}`);
    return;
  }
  world.hit('inbox.reshow.written');
  if (reshown.group !== item.group || reshown.level !== item.level || reshown.due_ms !== item.due_ms || reshown.breach) {
    world.violation(`a re-show of ${item.request.id} moved its group, level or deadline, or counted as a breach`);
  }
  const before = world.journal.chainNow(item.effect_id);
  const again = await world.guarded(`second re-show of ${item.request.id}`, () => p.inbox.reshowOnNewFacts(item.effect_id));
  // Another process may have moved the world in between (a send on the same payment): only an unchanged world is checked.
  if (again !== undefined && again !== null && canonical(world.journal.chainNow(item.effect_id).slice(0, before.length)) === canonical(before)) {
    const moved = again.facts;
    if (canonical(moved) === canonical(reshown.facts)) world.violation(`${item.request.id} was shown again twice on the same facts`);
  }
}

/** The world outside Interlock: hand refunds, disputes, people leaving and rejoining groups. */

/** What Stripe shows is left to refund on a payment. */
function leftCents(world: World, paymentIntent: string): number {
  const payment = world.target.payments.get(paymentIntent)!;
  const refunded = world.target.refunds.filter((r) => r.paymentIntent === paymentIntent && r.status !== 'failed').reduce((sum, r) => sum + r.amountCents, 0);
  return payment.amountCents - refunded;
}

export async function handRefund(world: World): Promise<void> {
  const paymentIntent = pickPayment(world);
  // The dashboard refuses more than Stripe shows is left.
  const left = leftCents(world, paymentIntent);
  if (left <= 0) return;
  world.target.refundByHand(paymentIntent, world.rng.randint(1, Math.min(left, 6000)));
}

export async function dispute(world: World): Promise<void> {
  const open = world.paymentIds.filter((id) => !world.target.payments.get(id)!.disputed);
  if (open.length > 0) world.target.dispute(world.pick(open));
}

/** Someone leaves a group: often one whose approval is recorded and not yet sent, so it must not be sent under them. */
export async function revokeMember(world: World): Promise<void> {
  const views = await caughtUp(world);
  const approvals = (views?.inbox.work.approved() ?? [])
    .flatMap((effectId) => world.journal.chainNow(effectId).filter((e) => e.kind === 'DECIDED' && e.decision === 'approve'));
  const approver = approvals.length > 0 && world.chance(0.6) ? world.pick(approvals) : null;
  if (approver) world.hit('world.revoke_member.approver_of_unsent');
  const group = approver?.kind === 'DECIDED' ? approver.group : world.pick(Object.keys(world.groups));
  const members = world.groups[group] ?? [];
  const person = approver?.kind === 'DECIDED' && members.includes(approver.by) ? approver.by : members.length > 0 ? world.pick(members) : null;
  if (person === null) return;
  world.groups[group] = members.filter((m) => m !== person);
  // As a config reload does (server/app/reload.ts): in force, then journaled, or taken back; then the
  // approvals of whoever left lapse at once.
  if (!(await journalReload(world, { left: [{ group, name: person }] }))) {
    world.groups[group] = members;
    return;
  }
  world.removed.push({ group, person });
  const lapsed = await world.guarded('a reload lapsing approvals', () => world.process.inbox.lapseRemovedApprovals());
  if (lapsed !== undefined && lapsed.size > 0) world.hit('world.revoke_member.lapsed');
}

export async function restoreMember(world: World): Promise<void> {
  if (world.removed.length === 0) return;
  const at = world.rng.randbelow(world.removed.length);
  const { group, person } = world.removed[at]!;
  const members = world.groups[group]!;
  if (!members.includes(person)) world.groups[group] = [...members, person];
  if (!(await journalReload(world, { joined: [{ group, name: person }] }))) {
    world.groups[group] = members;
    return;
  }
  world.removed.splice(at, 1);
}

/** Journal a reload that changed only group memberships; false when the journal refused it. */
async function journalReload(world: World, change: { joined?: Membership[]; left?: Membership[] }): Promise<boolean> {
  // As the reloader does: who came and went since the roster the journal names (a reload the
  // journal kept although the step that made it crashed is in it), else as the change says.
  const last = world.journal.chainNow(CONFIG_CHAIN_ID).at(-1);
  const before = last?.kind === 'CONFIG' && last.people !== undefined && last.members !== undefined ? { people: last.people, members: last.members } : null;
  const roster = world.roster();
  const changes = before !== null ? rosterChanges(before, roster) : { peopleAdded: [], peopleRemoved: [], joined: change.joined ?? [], left: change.left ?? [] };
  const comparedWith = before !== null && last?.kind === 'CONFIG' ? last.sha256 : null;
  const fields = configEntryFields({ atMs: world.clock.wallMs, sha256: world.rosterSha256(), cause: 'reload', comparedWith, roster, changes });
  return (await world.guarded('a reload', () => world.journal.append('CONFIG', CONFIG_CHAIN_ID, fields))) !== undefined;
}


/** Stripe settles a refund: most succeed, some fail. */
export async function settleRefund(world: World): Promise<void> {
  const pending = world.target.refunds.filter((r) => r.status === 'pending');
  if (pending.length === 0) return;
  world.target.settle(world.pick(pending).id, world.chance(0.85) ? 'succeeded' : 'failed');
}
