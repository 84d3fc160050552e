import { describe, expect, it } from 'vitest';
import type { MoneyFigures } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { isJsonObject } from '../../shared/json.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { allOf, has, latestEscalation } from '../../server/journal/chain.ts';
import { finalStatus } from '../../shared/receipts/confirmations.ts';
import { boundRequest, chainState, waitsItsTurn } from '../../server/inbox/state.ts';
import type { InboxRequest } from '../../server/inbox/inbox.ts';
import { type BoardFilter, computeScoreboard } from '../../server/scoreboard/figures.ts';
import { ScoreboardProjection } from '../../server/scoreboard/projection.ts';
import { moneySeries, scoreboardCsv } from '../../server/scoreboard/series.ts';
import { buildInboxWorld, HOUR_MS, type InboxWorld } from '../support/inbox-world.ts';

const MINUTE_MS = 60_000;
const GROUPS = ['ap-leads', 'controller', 'finance-manager', 'payments-ops', 'risk'] as const;
const MEMBER: Record<string, string> = { 'ap-leads': 'ana', controller: 'cy', 'finance-manager': 'fm', 'payments-ops': 'ops', risk: 'rita' };

/** A world whose orders are paid in the given currencies: the facts a decision reads name it, as Stripe's do. */
function worldIn(currencies: readonly string[]) {
  const world = buildInboxWorld();
  const currencyOfOrder = new Map<string, string>();
  const capture = world.target.capture.bind(world.target);
  world.target.capture = (order) => ({ ...capture(order), currency: currencyOfOrder.get(order) ?? currencies[0]! });
  let n = 0;
  const request = (amount: number, extra: Record<string, boolean> = {}, currency = currencies[n % currencies.length]!) => {
    n += 1;
    const r = world.request(amount, extra);
    currencyOfOrder.set(r.order as string, currency);
    return r;
  };
  return { world, request };
}

async function allEntries(world: InboxWorld): Promise<Entry[]> {
  return (await world.journal.scan(0, 10_000_000)).map((s) => s.entry);
}

const MONEY_ZERO: MoneyFigures = {
  failed_at_stripe_minor: 0,
  refunded_minor: 0,
  refunded_no_person_minor: 0,
  refunded_after_person_minor: 0,
  repaired_minor: 0,
  rejected_minor: 0,
  refused_stale_minor: 0,
  exposure_minor: 0,
  exposure_queued_minor: 0,
  exposure_waiting_stripe_minor: 0,
  exposure_approved_minor: 0,
};

/**
 * The money and the breaches by the group that missed them, recomputed from the journal's entries
 * with nothing of the scoreboard's code: each chain read whole through the inbox's own predicates.
 */
function chainsOf(entries: readonly Entry[]): Map<string, Entry[]> {
  const chains = new Map<string, Entry[]>();
  for (const e of entries) chains.set(e.effect_id, [...(chains.get(e.effect_id) ?? []), e]);
  return chains;
}

function recompute(entries: readonly Entry[], filter: BoardFilter) {
  const chains = chainsOf(entries);
  const money: Record<string, MoneyFigures> = {};
  const missed: Record<string, number> = {};
  for (const chain of chains.values()) {
    const first = chain[0]!;
    if (first.kind !== 'PROPOSED' || first.agent !== 'inbox') continue;
    const escalations = allOf(chain, 'ESCALATED');
    const at = first.at_ms ?? null;
    if (filter.fromMs !== undefined && (at === null || at < filter.fromMs)) continue;
    if (filter.toMs !== undefined && (at === null || at >= filter.toMs)) continue;
    if (filter.group !== undefined && !escalations.some((e) => e.group === filter.group)) continue;
    escalations.forEach((e, i) => {
      if (!e.breach) return;
      const group = (escalations[i - 1] ?? e).group;
      missed[group] = (missed[group] ?? 0) + 1;
    });
    const currency = isJsonObject(first.premises) && typeof first.premises.currency === 'string' ? first.premises.currency : 'unknown';
    const amount = first.effect.amount as number;
    const state = chainState(chain);
    const committed = has(chain, 'COMMITTED');
    // Sent, and not reported failed (or canceled) by Stripe since: the money went back.
    const failedAtStripe = committed && ['failed', 'canceled'].includes(finalStatus(allOf(chain, 'CONFIRMED').map((c) => c.status)) ?? '');
    const sent = committed && !failedAtStripe;
    const root = boundRequest(chain)?.repair_of === undefined;
    const byPolicy = allOf(chain, 'DISPATCHED').every((d) => isJsonObject(d.lease) && d.lease.by === 'policy');
    const cleared = sent && root && escalations.length === 0 && byPolicy;
    const decisions = allOf(chain, 'DECIDED');
    money[currency] ??= { ...MONEY_ZERO };
    const m = money[currency];
    if (sent) m.refunded_minor += amount;
    if (sent && cleared) m.refunded_no_person_minor += amount;
    if (sent && !cleared) m.refunded_after_person_minor += amount;
    if (sent && !root) m.repaired_minor += amount;
    if (decisions.some((d) => d.decision === 'reject')) m.rejected_minor += amount;
    if (!committed && allOf(chain, 'REFUSED').some((r) => r.code.startsWith('stale_premise'))) m.refused_stale_minor += amount;
    if (failedAtStripe) m.failed_at_stripe_minor += amount;
    if (waitsItsTurn(chain)) m.exposure_waiting_stripe_minor += amount;
    else if (state === 'NEW' || state === 'ESCALATED' || state === 'NEEDS_ESCALATION') m.exposure_queued_minor += amount;
    if (state === 'APPROVED' || state === 'SENDING') m.exposure_approved_minor += amount;
    m.exposure_minor = m.exposure_queued_minor + m.exposure_waiting_stripe_minor + m.exposure_approved_minor;
  }
  for (const [currency, m] of Object.entries(money)) if (Object.values(m).every((v) => v === 0)) delete money[currency];
  return { money, missed };
}

/** A small seeded generator (mulberry32), so a failing day can be replayed from its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]! };
}

/** An action that may meet an injected crash: the crash is the point, not a failure of the test. */
async function survive(action: Promise<unknown>): Promise<void> {
  try {
    await action;
  } catch (error) {
    if (!(error instanceof SimulatedCrash)) throw error;
  }
}

/** One random day (and a bit): requests in three currencies, people deciding, hand refunds, SLAs passing, crashes. */
/** Bind `r` as a request waiting its turn for Stripe's budget (server/stripe/turn-queue.ts `accept`): no facts, nothing else. */
async function waitTurn(world: InboxWorld, r: InboxRequest): Promise<void> {
  const effect = { order: r.order as string, amount: r.amount as number };
  await world.journal.append('PROPOSED', world.effectIdOf(r), { agent: 'inbox', lease: null, premises: null, effect, request: r, at_ms: world.clock.nowMs });
}

async function randomDay(seed: number, check: (world: InboxWorld, startMs: number) => Promise<void>) {
  const rnd = random(seed);
  const { world, request } = worldIn(['usd', 'jpy', 'eur']);
  const startMs = world.clock.nowMs;
  const ids: string[] = [];
  const orders = new Map<string, string>();
  for (let step = 0; step < 60; step++) {
    if (step % 15 === 14) {
      // A request that waits its turn to reach Stripe: bound with no facts, as the turn queue binds it.
      await waitTurn(world, request(120));
      await check(world, startMs);
    }
    world.clock.nowMs += rnd.int(1, 40) * MINUTE_MS;
    const roll = rnd.next();
    if (roll < 0.4) {
      const amount = rnd.pick([20, 45, 80, 150, 250, 300]);
      const r = request(amount, rnd.next() < 0.1 ? { flagged: true } : {});
      // Some payments barely cover the refund: a refund by hand then leaves less than asked, and a repair sends what is left.
      if (rnd.next() < 0.4) world.target.orders.get(r.order as string)!.amountCents = amount + 150;
      const id = world.effectIdOf(r);
      ids.push(id);
      orders.set(id, r.order as string);
      // A crash before the send (of this request, or of the next one sent): its dispatch stays open until recovery.
      if (rnd.next() < 0.08) world.target.injectFault('crash_before');
      await survive(world.inbox.submit(r));
      continue;
    }
    // Any open item, the new requests of accepted repairs included.
    const open = [...chainsOf(await allEntries(world)).values()].filter((chain) => {
      const { escalation, decision } = latestEscalation(chain);
      return escalation !== undefined && decision === undefined;
    });
    if (roll < 0.55 && ids.length > 0) {
      // Mostly on a payment someone is about to decide: the approval then goes stale.
      const first = open.length > 0 && rnd.next() < 0.8 ? rnd.pick(open)[0] : undefined;
      const order = first?.kind === 'PROPOSED' ? String(first.effect.order) : orders.get(rnd.pick(ids))!;
      world.target.refundByHand(order, rnd.pick([10, 100, 200]));
    } else if (roll < 0.85) {
      if (open.length === 0) continue;
      const chain = rnd.pick(open);
      const id = chain[0]!.effect_id;
      const escalation = latestEscalation(chain).escalation!;
      const by = MEMBER[escalation.group]!;
      const how = rnd.next();
      // A repair that sends what is left (a new request) when one is offered, else the same refund on the facts now.
      const smaller = escalation.repairs.findIndex((repair) => repair.set.amount !== undefined);
      if (escalation.repairs.length > 0 && how < 0.4) await survive(world.inbox.repair(id, by, Math.max(0, smaller)));
      else if (how < 0.6) await survive(world.inbox.reject(id, by, { reason: 'not this one' }));
      else await survive(world.inbox.approve(id, by, { execute: rnd.next() < 0.7 }));
    } else if (roll < 0.88) {
      // Stripe reports on a refund sent: mostly succeeded, sometimes failed (the money did not go back).
      const sent = [...chainsOf(await allEntries(world)).values()].filter((chain) => has(chain, 'COMMITTED'));
      if (sent.length === 0) continue;
      const chain = rnd.pick(sent);
      const status = rnd.next() < 0.5 ? 'failed' : 'succeeded';
      await world.journal.append('CONFIRMED', chain[0]!.effect_id, { via: 'webhook', event: `evt_${step}`, refund: `re_${step}`, status, amount: 1, payment_intent: 'pi_day', created: step });
    } else if (roll < 0.92) {
      await survive(world.inbox.options.gate.recover().then((recovered) => world.inbox.reconcile(recovered)));
    } else {
      world.clock.nowMs += rnd.int(1, 5) * HOUR_MS;
      await survive(world.inbox.tick());
    }
  }
  await check(world, startMs);
}

describe('scoreboard money, per currency', () => {
  it('a JPY refund counts in yen and a USD one in cents, never added together; the CSV names each currency', async () => {
    // seed: test_scoreboard.py test_scoreboard_counts_a_scripted_journal (money, per currency)
    const { world, request } = worldIn(['usd']);
    expect(await world.inbox.submit(request(45, {}, 'usd'))).toBe('COMMITTED');
    expect(await world.inbox.submit(request(50, {}, 'jpy'))).toBe('COMMITTED');
    const queued = request(80, {}, 'jpy');
    expect(await world.inbox.submit(queued)).toBe('QUEUED');
    const board = computeScoreboard(await allEntries(world), 'inbox');
    expect(board.money).toEqual({
      jpy: { ...MONEY_ZERO, refunded_minor: 50, refunded_no_person_minor: 50, exposure_minor: 80, exposure_queued_minor: 80 },
      usd: { ...MONEY_ZERO, refunded_minor: 45, refunded_no_person_minor: 45 },
    });
    const csv = scoreboardCsv(board);
    expect(csv).toContain('"money.jpy.refunded_minor",50\r\n');
    expect(csv).toContain('"money.usd.refunded_minor",45\r\n');
    // Added figures come after every earlier line, so a reader of the older lines is not moved.
    const lines = csv.trim().split('\r\n');
    expect(lines.findIndex((l) => l.startsWith('"money.'))).toBeGreaterThan(lines.findIndex((l) => l.startsWith('"time_to_decision.max_ms"')));
    expect(lines.slice(0, 2)).toEqual(['figure,value', '"requests",3']);
    // A money figure added later (failed at Stripe) comes after every currency's earlier money lines.
    const failedLines = lines.filter((l) => l.includes('.failed_at_stripe_minor"'));
    expect(failedLines).toEqual(['"money.jpy.failed_at_stripe_minor",0', '"money.usd.failed_at_stripe_minor",0']);
    // Then the figures added after it, in the order they were added: the approvals on the facts now, and
    // the money waiting its turn to reach Stripe; every line the CSV had before them keeps its place.
    const waitingLines = ['"money.jpy.exposure_waiting_stripe_minor",0', '"money.usd.exposure_waiting_stripe_minor",0'];
    expect(lines.slice(-5)).toEqual([...failedLines, '"approved_on_facts_now",0', ...waitingLines]);
  });

  it('the scripted day, in money: by policy and after a person, repaired, rejected, refused as stale, and open exposure', async () => {
    const { world, request } = worldIn(['usd']);
    const { inbox, target, clock } = world;
    // Cleared by policy.
    expect(await inbox.submit(request(20))).toBe('COMMITTED');
    // Approved and sent after a person.
    const judged = request(80);
    await inbox.submit(judged);
    expect(await inbox.approve(world.effectIdOf(judged), 'ana')).toBe('COMMITTED');
    // Approved, not sent yet.
    const later = request(90);
    await inbox.submit(later);
    expect(await inbox.approve(world.effectIdOf(later), 'ana', { execute: false })).toBe('APPROVED');
    // Rejected.
    const flagged = request(30, { flagged: true });
    await inbox.submit(flagged);
    expect(await inbox.reject(world.effectIdOf(flagged), 'rita', { reason: 'flagged customer' })).toBe('REJECTED');
    // Refused as stale (70 of 400 refunded by hand before the send); the repair sends what is left.
    const stale = request(40);
    target.orders.get(stale.order as string)!.amountCents = 100;
    target.onTouch = (order) => {
      if (order !== stale.order) return;
      target.onTouch = null;
      target.refundByHand(order, 70);
    };
    expect(await inbox.submit(stale)).toBe('REFUSED:stale_premise');
    clock.nowMs += 10 * MINUTE_MS;
    expect(await inbox.repair(world.effectIdOf(stale), 'ana', 0)).toBe('COMMITTED');
    // Waiting for a person.
    await inbox.submit(request(250));
    // Waiting its turn to reach Stripe: no person has it, and it has no facts yet, so no currency.
    await waitTurn(world, request(60));
    // Cleared by policy and sent, then Stripe reported the refund failed: no money went back.
    const failing = request(15);
    expect(await inbox.submit(failing)).toBe('COMMITTED');
    await world.journal.append('CONFIRMED', world.effectIdOf(failing), { via: 'webhook', event: 'evt_failed', refund: 're_failed', status: 'failed', amount: 15, payment_intent: 'pi_failed', created: 1 });
    const board = computeScoreboard(await allEntries(world), 'inbox');
    expect(board.money).toEqual({
      usd: {
        refunded_minor: 20 + 80 + 30,
        refunded_no_person_minor: 20,
        refunded_after_person_minor: 80 + 30,
        repaired_minor: 30,
        rejected_minor: 30,
        refused_stale_minor: 40,
        failed_at_stripe_minor: 15,
        exposure_minor: 90 + 250,
        exposure_queued_minor: 250,
        exposure_waiting_stripe_minor: 0,
        exposure_approved_minor: 90,
      },
      unknown: { ...MONEY_ZERO, exposure_minor: 60, exposure_waiting_stripe_minor: 60 },
    });
    // The one waiting for a person is the one open item; the one waiting for Stripe is no trip to a person.
    expect(board.open).toBe(1);
  });
});

describe('SLA breaches by the group that missed them', () => {
  it('a move from ap-leads to finance-manager is ap-leads’ miss; the mark at the top of the chain is finance-manager’s; the entry count is unchanged', async () => {
    // seed: test_routing.py test_top_of_chain_breach_recorded_once (and attributed to the group that missed it)
    const { world, request } = worldIn(['usd']);
    const r = request(80);
    await world.inbox.submit(r);
    world.clock.nowMs += 4 * HOUR_MS + MINUTE_MS;
    await world.inbox.tick();
    world.clock.nowMs += 4 * HOUR_MS + MINUTE_MS;
    await world.inbox.tick();
    const board = computeScoreboard(await allEntries(world), 'inbox');
    expect(board.sla_breaches).toBe(2);
    expect(board.sla_breaches_by_group).toEqual({ 'finance-manager': 2 });
    expect(board.sla_breaches_missed_by_group).toEqual({ 'ap-leads': 1, 'finance-manager': 1 });
  });
});

describe('figures equal a recomputation from the journal alone, over random days', () => {
  /** What the days covered, so a change that makes them trivial fails here. */
  const covered = { breaches: 0, currencies: new Set<string>(), states: new Set<string>() };
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('day %i: counts and money, per currency, per group, per period', async (seed) => {
    const rnd = random(seed * 7919);
    const projection = new ScoreboardProjection('inbox');
    let seen = 0;
    await randomDay(seed, async (world, startMs) => {
      const all = await allEntries(world);
      for (const entry of all.slice(seen)) projection.note(entry);
      seen = all.length;
      const whole = await projection.board();
      expect(whole).toEqual(computeScoreboard(all, 'inbox'));
      const oracle = recompute(all, {});
      expect(whole.money).toEqual(oracle.money);
      expect(whole.sla_breaches_missed_by_group).toEqual(oracle.missed);
      covered.breaches += whole.sla_breaches;
      for (const [currency, m] of Object.entries(whole.money)) {
        covered.currencies.add(currency);
        for (const [field, value] of Object.entries(m)) if (value > 0) covered.states.add(field);
      }
      for (let i = 0; i < 6; i++) {
        const a = startMs + rnd.int(0, 40) * HOUR_MS;
        const b = a + rnd.int(1, 30) * HOUR_MS;
        const filter: BoardFilter = {
          ...(rnd.next() < 0.7 ? { fromMs: a } : {}),
          ...(rnd.next() < 0.7 ? { toMs: b } : {}),
          ...(rnd.next() < 0.5 ? { group: rnd.pick(GROUPS) } : {}),
        };
        const slice = await projection.slice(filter);
        expect(slice, JSON.stringify(filter)).toEqual(computeScoreboard(all, 'inbox', { filter }));
        const sliced = recompute(all, filter);
        expect(slice.money, JSON.stringify(filter)).toEqual(sliced.money);
        expect(slice.sla_breaches_missed_by_group, JSON.stringify(filter)).toEqual(sliced.missed);
        // Breaches are counted once either way: by the group that received them, or that missed them.
        const sum = (counts: Record<string, number>) => Object.values(counts).reduce((n, c) => n + c, 0);
        expect(sum(slice.sla_breaches_missed_by_group)).toBe(slice.sla_breaches);
        // The chart's buckets add up to the period's refunded money, currency by currency.
        if (filter.fromMs !== undefined && filter.toMs !== undefined) {
          const series = moneySeries((await projection.chains()).filter((f) => filter.group === undefined || f.groups.includes(filter.group)), filter.fromMs, filter.toMs);
          for (const [currency, m] of Object.entries(slice.money)) {
            const points = series[currency] ?? [];
            expect(points.reduce((n, p) => n + p.no_person_minor, 0)).toBe(m.refunded_no_person_minor);
            expect(points.reduce((n, p) => n + p.after_person_minor, 0)).toBe(m.refunded_after_person_minor);
          }
        }
      }
    });
  });

  it('the days were not trivial: three currencies, deadlines missed, and every money figure above zero somewhere', () => {
    // `unknown`: the requests waiting their turn for Stripe, which have no facts yet.
    expect([...covered.currencies].sort()).toEqual(['eur', 'jpy', 'unknown', 'usd']);
    expect(covered.breaches).toBeGreaterThan(0);
    expect([...covered.states].sort()).toEqual(Object.keys(MONEY_ZERO).sort());
  });
});
