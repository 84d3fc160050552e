import { type APIRequestContext, expect, type Page, test } from '@playwright/test';
import type { Scoreboard } from '../shared/api.ts';
import {
  advanceClock,
  askRefund,
  createPayment,
  decide,
  expectAccessible,
  PASSWORD,
  PAST_SLA_MS,
  personPage,
  queuedRefund,
  SANDBOX_URL,
  shoot,
  shootAndScan,
  uniqueId,
} from './journey-helpers.ts';

// Finance's journey: the money by currency (a refund in dollars and one in yen), the breaches by
// the group that missed them, and the inbox, Done, Closed and an item read only, deciding nothing.
test.describe.configure({ mode: 'serial', timeout: 120_000 });

/** The figures refresh every 5 s: a change shows within one refresh and a read. */
const REFRESHED_WITHIN_MS = 8_000;

/** A payment in yen, confirmed, made through the sandbox's Stripe API as a shop's checkout would. */
async function yenPayment(request: APIRequestContext, amountYen: number): Promise<string> {
  const response = await request.post(`${SANDBOX_URL}/v1/payment_intents`, {
    form: { amount: String(amountYen), currency: 'jpy', payment_method: 'pm_card_visa', confirm: 'true' },
    headers: { authorization: 'Bearer sk_test_interlock_sandbox' },
  });
  expect(response.ok(), await response.text()).toBe(true);
  return ((await response.json()) as { id: string }).id;
}

/** The board the page shows, read from the API with the page's own query (its CSV link). */
async function pageBoard(page: Page): Promise<Scoreboard> {
  const href = (await page.getByRole('link', { name: 'Download CSV' }).getAttribute('href')) ?? '';
  const query = new URL(href, 'http://x').search;
  const response = await page.request.get(`/api/scoreboard${query}`);
  expect(response.ok()).toBe(true);
  return ((await response.json()) as { board: Scoreboard }).board;
}

/** Every money figure on the page (`data-money` → raw minor units). */
async function moneyOn(page: Page, selector: string): Promise<Record<string, number>> {
  return page
    .locator(`${selector} [data-money]`)
    .evaluateAll((elements) => Object.fromEntries(elements.map((e) => [(e as HTMLElement).dataset.money, Number((e as HTMLElement).dataset.value)])));
}

function flatMoney(board: Scoreboard): Record<string, number> {
  const flat: Record<string, number> = {};
  for (const [currency, figures] of Object.entries(board.money)) for (const [field, value] of Object.entries(figures)) flat[`${currency}.${field}`] = value;
  return flat;
}

function chartRow(page: Page, title: string, row: string) {
  const chart = page.locator('figure', { has: page.getByRole('heading', { name: title, exact: true }) });
  return chart.getByRole('row', { name: new RegExp(`^${row}`) }).locator('.bar-count');
}

test('finance reads money in dollars and yen, breaches by the group that missed them, and the history read only', async ({ page, browser, request }) => {
  // A refund in dollars and one in yen, both cleared with no person ($50.00 and ¥5,000 are under the rule's 5000).
  const usd = await askRefund(request, { request_id: uniqueId('fin-usd'), payment_intent: await createPayment(request, 10_000), amount: 2_000 });
  expect(usd.status).toBe('COMMITTED');
  const jpy = await askRefund(request, { request_id: uniqueId('fin-jpy'), payment_intent: await yenPayment(request, 10_000), amount: 5_000 });
  expect(jpy.status).toBe('COMMITTED');
  // Three judgment calls in ap-leads: one rejected, one approved, one left until its SLA passes.
  const toClose = await queuedRefund(request, 8_000, 10_000, 'fin-close');
  const toApprove = await queuedRefund(request, 7_000, 10_000, 'fin-approve');
  const toBreach = await queuedRefund(request, 6_000, 10_000, 'fin-breach');
  const ana = await personPage(browser, 'ana');
  await decide(ana, toClose.effectId, 'reject');
  expect((await decide(ana, toApprove.effectId, 'approve')).status).toBe('COMMITTED');
  // ap-leads lets the deadline pass: the item moves up to finance-manager, and the miss is ap-leads'.
  await advanceClock(ana, PAST_SLA_MS);
  await ana.context().close();

  await page.goto('/');
  await page.getByLabel('Name').fill('fin');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page).toHaveURL(/\/scoreboard$/);
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const name of ['Inbox (read only)', 'Done', 'Closed', 'Scoreboard']) await expect(nav.getByRole('link', { name, exact: false }).first()).toBeVisible();
  await expect(page.locator('.user-groups')).toHaveText('finance (read only)');

  // The money on the page is the API's, currency by currency, and yen has no decimals.
  let board: Scoreboard | null = null;
  await expect(async () => {
    board = await pageBoard(page);
    expect(board.money.jpy?.refunded_minor ?? 0).toBeGreaterThanOrEqual(5_000);
    expect(await moneyOn(page, '.money-table')).toEqual(flatMoney(board));
    const headline = await moneyOn(page, '.money-grid');
    for (const [key, value] of Object.entries(headline)) expect(value, key).toBe(flatMoney(board)[key]);
  }).toPass({ timeout: REFRESHED_WITHIN_MS });
  const shown = board!;
  const yen = page.locator('.money-table [data-money="jpy.refunded_minor"]');
  await expect(yen).toHaveText(`¥${shown.money.jpy!.refunded_minor.toLocaleString('en-US')}`);
  await expect(yen).not.toContainText('.');
  await expect(page.locator('.money-table [data-money="usd.refunded_no_person_minor"]')).toHaveText(/^\$[\d,]+\.\d\d$/);
  await expect(page.locator('.money-chart[data-currency="jpy"]')).toBeVisible();
  await expect(page.locator('.money-chart[data-currency="usd"]')).toBeVisible();

  // Breaches by the group that missed them: ap-leads, while the entry count names finance-manager.
  expect(shown.sla_breaches_missed_by_group['ap-leads']).toBeGreaterThanOrEqual(1);
  await expect(chartRow(page, 'SLA breaches by the group that missed them', 'ap-leads')).toHaveText(String(shown.sla_breaches_missed_by_group['ap-leads']));
  await expect(chartRow(page, 'SLA breaches by group', 'finance-manager')).toHaveText(String(shown.sla_breaches_by_group['finance-manager']));
  await shootAndScan(page, 'scoreboard-finance');
  // The money in view, for the README: its cards and the first currency's chart.
  await page.evaluate(() => window.scrollTo(0, (document.getElementById('money-title')?.getBoundingClientRect().top ?? 0) + window.scrollY - 24));
  await page.screenshot({ path: 'test-results/screenshots/scoreboard-money-1280.png', animations: 'disabled' });

  // The inbox, read only: every group's items, no decision from the keyboard.
  await nav.getByRole('link', { name: /Inbox/ }).click();
  await expect(page.getByRole('heading', { name: 'Inbox', exact: true })).toBeVisible();
  await expect(page.locator('.lede')).toContainText('Read only');
  const row = page.locator(`li.inbox-row[data-request-id="${toBreach.requestId}"]`);
  await expect(row).toContainText('finance-manager');
  await row.locator('.row-link').focus();
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await expect(page).not.toHaveURL(/\/items\//);
  await expectAccessible(page, 'the inbox, read only');

  // An open item: everything to read, no button to decide, and why.
  await row.locator('.row-link').click();
  await expect(page.getByRole('heading', { name: 'Read only' })).toBeVisible();
  await expect(page.locator('.read-only-panel')).toContainText('decides nothing');
  await expect(page.getByRole('button', { name: /Approve|Reject|Accept repair|Close/ })).toHaveCount(0);
  await shootAndScan(page, 'item-finance-read-only');

  // The decisions route refuses finance over HTTP, whatever the page shows.
  const session = (await (await page.request.get('/api/session')).json()) as { csrf_token: string };
  const detail = (await (await page.request.get(`/api/items/${toBreach.effectId}`)).json()) as { item: { escalation: string } };
  const refused = await page.request.post(`/api/items/${toBreach.effectId}/decisions`, {
    data: { action: 'approve', escalation: detail.item.escalation },
    headers: { 'x-csrf-token': session.csrf_token },
  });
  expect([refused.status(), ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([403, 'forbidden']);

  // Done and Closed, and a closed item read only.
  await nav.getByRole('link', { name: 'Done' }).click();
  await page.goto(`/done?q=${toApprove.requestId}`);
  await expect(page.locator('.history-table')).toContainText(toApprove.requestId);
  await page.goto(`/closed?q=${toClose.requestId}`);
  await expect(page.locator('.history-table')).toContainText(toClose.requestId);
  await expectAccessible(page, 'closed, for finance');
  await shoot(page, 'closed-finance');
  await page.goto(`/items/${toClose.effectId}`);
  await expect(page.getByRole('heading', { name: 'Read only' })).toBeVisible();
  await expect(page.getByRole('button', { name: /Approve|Reject|Accept repair/ })).toHaveCount(0);
});
