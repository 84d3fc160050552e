import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Escalated } from '../../shared/entries.ts';
import { DEFAULT_CONFIG_PATH, parseConfig } from '../../server/config/load.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The rules and routes of the shipped config read an amount in the payment's own currency, through
// the agents' API against the Stripe sandbox: a threshold names its currency, an amount in another
// one is never compared with it as if it were dollars, and a currency no rule names goes to a
// person, who is told so. The escalation fixes the words of each failed rule when the rules run.

let shipped: AppWorld;
let usdOnly: AppWorld;

/** The shipped config with its amount rule naming US dollars only. */
function usdOnlyConfig() {
  const text = readFileSync(DEFAULT_CONFIG_PATH, 'utf8').replace(/(kind: amount_at_most, )amount: \{[^}]*\}/, '$1amount: { usd: 5000 }');
  return { ...parseConfig(text, 'interlock.yaml (usd only)'), testMode: true };
}

beforeAll(async () => {
  shipped = await buildAppWorld();
  usdOnly = await buildAppWorld({ config: usdOnlyConfig() });
});
afterAll(async () => {
  await shipped.close();
  await usdOnly.close();
});

let asked = 0;

/** Ask for `amount` on a fresh payment of `paid` in `currency`; the status and the escalation, if any. */
async function ask(world: AppWorld, currency: string, paid: number, amount: number) {
  const intent = await world.sandbox.stripe().paymentIntents.create({ amount: paid, currency, payment_method: 'pm_card_visa', confirm: true });
  asked += 1;
  const answer = (await world.agent('POST', '/v1/refunds', { request_id: `money-${asked}`, payment_intent: intent.id, amount })).json();
  const chain = await world.services.journal.entries(answer.effect_id);
  const escalation = chain.find((entry): entry is Escalated => entry.kind === 'ESCALATED');
  return { status: answer.status as string, why: answer.why as string, group: escalation?.group ?? null, escalation };
}

describe('the shipped rules compare an amount in its own currency', () => {
  it.each([
    // currency, paid, asked, status, group, the agent's why
    ['usd', 10_000, 5_000, 'COMMITTED', null, 'the refund was sent to Stripe once'],
    ['usd', 10_000, 5_001, 'QUEUED', 'ap-leads', 'an approver must decide: over $50.00'],
    ['eur', 10_000, 5_000, 'COMMITTED', null, 'the refund was sent to Stripe once'],
    ['eur', 10_000, 6_000, 'QUEUED', 'ap-leads', 'an approver must decide: over €50.00'],
    // ¥6,000 is about $40: under the yen limit of ¥7,000, not "over $50".
    ['jpy', 10_000, 6_000, 'COMMITTED', null, 'the refund was sent to Stripe once'],
    ['jpy', 10_000, 8_000, 'QUEUED', 'ap-leads', 'an approver must decide: over ¥7,000'],
    // ¥25,000 is about $167: not over the large route's ¥30,000, so not the controller's.
    ['jpy', 50_000, 25_000, 'QUEUED', 'ap-leads', 'an approver must decide: over ¥7,000'],
    ['jpy', 50_000, 30_001, 'QUEUED', 'controller', 'an approver must decide: over ¥7,000'],
    // No rule names the won or the dinar: a person decides, and is told so (the large route takes it).
    ['krw', 100_000, 5_000, 'QUEUED', 'controller', 'an approver must decide: no amount limit for KRW'],
    ['kwd', 100_000, 4_000, 'QUEUED', 'controller', 'an approver must decide: no amount limit for KWD'],
  ])('%s: %i paid, %i asked: %s to %s', async (currency, paid, amount, status, group, why) => {
    const told = await ask(shipped, currency, paid, amount);
    expect({ status: told.status, group: told.group, why: told.why }).toEqual({ status, group, why });
  });

  it('an escalation keeps the words of each failed rule, fixed when the rules ran, beside their names', async () => {
    const intent = await shipped.sandbox.stripe().paymentIntents.create({ amount: 10_000, currency: 'jpy', payment_method: 'pm_card_createDispute', confirm: true });
    const answer = (await shipped.agent('POST', '/v1/refunds', { request_id: 'money-words', payment_intent: intent.id, amount: 9_000, flags: ['vip'] })).json();
    expect(answer.why).toBe('an approver must decide: over ¥7,000 · flag: vip · disputed');
    const escalation = (await shipped.services.journal.entries(answer.effect_id)).find((entry): entry is Escalated => entry.kind === 'ESCALATED');
    expect(escalation?.detail).toEqual(["amount within its currency's limit", 'no flag that needs a person', 'payment not disputed']);
    expect(escalation?.failed_rules).toEqual([
      { rule: "amount within its currency's limit", words: 'over ¥7,000' },
      { rule: 'no flag that needs a person', words: 'flag: vip' },
      { rule: 'payment not disputed', words: 'disputed' },
    ]);
    expect(escalation?.why).toBe('over ¥7,000 · flag: vip · disputed');
  });
});

describe('a rule that names US dollars only', () => {
  it.each([
    // ¥5,000 and €50.00 are not $50.00: they are not compared with it, and go to a person.
    ['jpy', 10_000, 5_000, 'an approver must decide: no amount limit for JPY'],
    ['eur', 10_000, 5_000, 'an approver must decide: no amount limit for EUR'],
  ])('%s: %i paid, %i asked goes to a person', async (currency, paid, amount, why) => {
    const told = await ask(usdOnly, currency, paid, amount);
    expect({ status: told.status, why: told.why }).toEqual({ status: 'QUEUED', why });
  });

  it('a dollar amount under it still clears with no person', async () => {
    expect((await ask(usdOnly, 'usd', 10_000, 5_000)).status).toBe('COMMITTED');
  });
});
