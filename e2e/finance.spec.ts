import { type APIRequestContext, expect, type Page, test } from '@playwright/test';
import type { Scoreboard } from '../shared/api.ts';
import type { LedgerTotals } from '../shared/ledger.ts';
import {
  advanceClock,
  askRefund,
  createPayment,
  decide,
  expectAccessible,
  expectNoHorizontalOverflow,
  PASSWORD,
  PAST_SLA_MS,
  personSession,
  queuedRefund,
  REJECT_REASON,
  SANDBOX_URL,
  shoot,
  shootAndScan,
  uniqueId,
} from './journey-helpers.ts';

// Finance's journey: the money by currency (a refund in dollars and one in yen), the breaches by
// the group that missed them, the inbox, Done, Closed and an item read only, deciding nothing;
// then the ledger filtered, its CSV checked against the API, and a reconciliation with Stripe
// that finds a refund planted by hand.
test.describe.configure({ mode: 'serial', timeout: 180_000 });

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

test('finance reads money in dollars and yen, breaches by the group that missed them, the history read only, the ledger and its CSV, and a reconciliation with a hand refund', async ({ page, browser, request }) => {
  // A refund in dollars and one in yen, both cleared with no person ($20.00 and ¥5,000 are under the rule's 5000).
  const usdPayment = await createPayment(request, 10_000);
  const usdRequest = uniqueId('fin-usd');
  const usd = await askRefund(request, { request_id: usdRequest, payment_intent: usdPayment, amount: 2_000 });
  expect(usd.status).toBe('COMMITTED');
  const jpy = await askRefund(request, { request_id: uniqueId('fin-jpy'), payment_intent: await yenPayment(request, 10_000), amount: 5_000 });
  expect(jpy.status).toBe('COMMITTED');
  // Three judgment calls in ap-leads: one rejected, one approved, one left until its SLA passes.
  const toClose = await queuedRefund(request, 8_000, 10_000, 'fin-close');
  const toApprove = await queuedRefund(request, 7_000, 10_000, 'fin-approve');
  const toBreach = await queuedRefund(request, 6_000, 10_000, 'fin-breach');
  const ana = await personSession(browser, 'ana');
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

  // Breaches by the group that missed them (ap-leads, in red), beside the items each group received
  // after another missed them (finance-manager, not coloured). Other journeys' SLAs pass on the same
  // server meanwhile: the page is compared with a read of the same moment, across one refresh.
  const breaches = page.locator('.breach-table');
  await expect(async () => {
    const now = await pageBoard(page);
    expect(now.sla_breaches_missed_by_group['ap-leads']).toBeGreaterThanOrEqual(1);
    await expect(breaches.locator('tr[data-group="ap-leads"] .bar-count')).toHaveText(String(now.sla_breaches_missed_by_group['ap-leads']), { timeout: 1_000 });
    await expect(breaches.locator('tr[data-group="finance-manager"] td.breach-received')).toHaveText(String(now.sla_breaches_by_group['finance-manager']), {
      timeout: 1_000,
    });
  }).toPass({ timeout: REFRESHED_WITHIN_MS });
  await shootAndScan(page, 'scoreboard-finance');
  // The money in view, for the README: its cards and the first currency's chart.
  // Scrolled to the Money heading, below the sticky header rather than under it.
  await page.evaluate(() => {
    const header = document.querySelector('header')?.getBoundingClientRect().height ?? 0;
    window.scrollTo(0, (document.getElementById('money-title')?.getBoundingClientRect().top ?? 0) + window.scrollY - header - 16);
  });
  await page.screenshot({ path: 'test-results/screenshots/scoreboard-money-1280.png', animations: 'disabled' });

  // The inbox, read only: every group's items, no decision from the keyboard.
  await nav.getByRole('link', { name: /Inbox/ }).click();
  await expect(page.getByRole('heading', { name: 'Inbox', exact: true })).toBeVisible();
  await expect(page.locator('.lede')).toContainText('Read only');
  const row = page.locator(`li.inbox-row[data-request-id="${toBreach.requestId}"]`);
  await expect(row).toContainText('finance-manager');
  // Finance decides nothing, so nothing is addressed to them as if they did.
  await expect(row).toContainText('Needs a person: over $50.00');
  await expect(row).not.toContainText('Needs you');
  await row.locator('.row-link').focus();
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await expect(page).not.toHaveURL(/\/items\//);
  // The inbox is scanned whole by the a11y sweep, every row alike: here, what reading only changes
  // (the lede, and a row with nothing to decide), not every open item of the run.
  await expectAccessible(page, 'the inbox, read only', `.lede, li.inbox-row[data-request-id="${toBreach.requestId}"]`);

  // An open item: everything to read, no button to decide, and why.
  await row.locator('.row-link').click();
  await expect(page.getByRole('heading', { name: 'Read only' })).toBeVisible();
  await expect(page.locator('.read-only-panel')).toContainText('decides nothing');
  await expect(page.locator('.why-panel')).toContainText('Needs a person: over $50.00');
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
  // A rejection is named one way, with the reason the approver gave.
  const closedRow = page.locator(`tr[data-request-id="${toClose.requestId}"]`);
  await expect(closedRow.locator('.badge')).toHaveText('Rejected: never sent');
  await expect(closedRow).toContainText(`Why: ${REJECT_REASON}`);
  await expectAccessible(page, 'closed, for finance');
  await shoot(page, 'closed-finance');
  await page.goto(`/items/${toClose.effectId}`);
  await expect(page.getByRole('heading', { name: 'Read only' })).toBeVisible();
  await expect(page.locator('.state-badge')).toHaveText('Rejected: never sent');
  await expect(page.getByRole('button', { name: /Approve|Reject|Accept repair/ })).toHaveCount(0);

  // The ledger, from the header: the refund the policy cleared, then only what waits, kept in the address.
  await nav.getByRole('link', { name: 'Ledger' }).click();
  await expect(page.getByRole('heading', { name: 'Ledger', exact: true })).toBeVisible();
  const table = page.locator('.ledger-table');
  await expect(table.getByRole('rowheader', { name: new RegExp(usdRequest) })).toBeVisible();
  await expect(table.getByRole('row', { name: new RegExp(usdRequest) })).toContainText('Policy');
  await page.getByLabel('Status').selectOption('QUEUED');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await expect(page).toHaveURL(/\/ledger\?status=QUEUED$/);
  await expect(table.getByRole('rowheader', { name: new RegExp(toBreach.requestId) })).toBeVisible();
  await expect(table.getByRole('rowheader', { name: new RegExp(usdRequest) })).toHaveCount(0);
  // Scanned below with the totals of a filter, and by the a11y sweep.
  await shoot(page, 'ledger');

  // Its CSV link carries the page's filter. What the CSV holds (the JSON pages' rows, field for
  // field, its columns and media type) is checked without a browser in test/ledger/ledger-http.test.ts.
  expect(await page.getByRole('link', { name: 'Download CSV' }).getAttribute('href')).toBe('/api/ledger.csv?status=QUEUED');
  await page.reload();
  await expect(page.getByLabel('Status')).toHaveValue('QUEUED');
  await expect(table.getByRole('rowheader', { name: new RegExp(toBreach.requestId) })).toBeVisible();

  // The month's close: the rejected requests apart from the repaired ones, each with its reason,
  // and the totals of the filter per currency, as the API adds them up.
  await page.getByLabel('Status').selectOption('');
  await page.getByLabel('Outcome').selectOption('rejected');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await expect(page).toHaveURL(/\/ledger\?outcome=rejected$/);
  const rejectedRow = table.getByRole('row', { name: new RegExp(toClose.requestId) });
  await expect(rejectedRow.locator('.badge')).toHaveText('Rejected: never sent');
  await expect(rejectedRow).toContainText(`Why: ${REJECT_REASON}`);
  await expect(rejectedRow).toContainText('agent told CLOSED');
  await expect(table.locator('tbody tr:not([data-outcome="rejected"])')).toHaveCount(0);
  const totals = (await (await page.request.get('/api/ledger/totals?outcome=rejected')).json()) as LedgerTotals;
  expect(totals.currencies.usd?.by_outcome.rejected.count).toBeGreaterThanOrEqual(1);
  const shownTotals = await page.locator('.ledger-totals [data-total]').evaluateAll((elements) =>
    Object.fromEntries(elements.map((e) => [(e as HTMLElement).dataset.total, Number((e as HTMLElement).dataset.value)])),
  );
  expect(shownTotals['usd.asked_minor']).toBe(totals.currencies.usd?.asked_minor);
  expect(shownTotals['usd.rejected.asked_minor']).toBe(totals.currencies.usd?.by_outcome.rejected.asked_minor);
  await expect(page.locator('.ledger-totals-table tr[data-currency="usd"]')).toContainText(`Rejected: never sent: ${totals.currencies.usd?.by_outcome.rejected.count}`);
  await expectAccessible(page, 'the ledger, rejected requests with their totals');
  await page.setViewportSize({ width: 390, height: 844 });
  await expectNoHorizontalOverflow(page, 'the ledger at 390 px');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: 'test-results/screenshots/ledger-rejected-1280.png', animations: 'disabled' });
  // The CSV of the same filter (the outcome, the reason, ISO times and decimal amounts after every
  // earlier column) is checked in test/ledger/ledger-http.test.ts.

  // Somebody refunds $12.34 by hand in Stripe's dashboard on the dollar payment Interlock refunded.
  const planted = await request.post(`${SANDBOX_URL}/_sandbox/hand-refunds`, { data: { paymentIntent: usdPayment, amountCents: 1_234 } });
  expect(planted.ok(), await planted.text()).toBe(true);
  const handRefund = ((await planted.json()) as { id: string }).id;

  // Reconciliation, from the header: the hand refund is found with its id and amount, Interlock's own matched.
  await nav.getByRole('link', { name: 'Reconciliation' }).click();
  await expect(page.getByRole('heading', { name: 'Reconciliation', level: 1 })).toBeVisible();
  // The period picker starts at the last seven days, today included.
  await expect(page.getByLabel('First day')).not.toHaveValue('');
  await expect(page.getByLabel('Last day (included)')).not.toHaveValue('');
  await page.getByRole('button', { name: 'Compare with Stripe' }).click();
  const progress = page.getByRole('status').filter({ hasText: 'payments listed' });
  await expect(progress).toBeVisible();
  await expect(page.locator('.reconcile-run .badge', { hasText: 'Done' })).toBeVisible({ timeout: 30_000 });
  await expect(progress).toContainText(/(\d+) of \1 payments listed/);
  const runId = new URL(page.url()).searchParams.get('run');
  expect(runId).toMatch(/^rec_[0-9a-f]{16}$/);

  const byHand = page.locator('section.reconcile-category', { has: page.getByRole('heading', { name: /In Stripe, not made by Interlock/ }) });
  const handRow = byHand.locator(`tr[data-refund="${handRefund}"]`);
  await expect(handRow).toContainText(handRefund);
  await expect(handRow).toContainText('$12.34');
  await expect(handRow).toContainText(usdPayment);
  await expect(handRow.getByRole('link', { name: 'An item on this payment' })).toHaveAttribute('href', `/items/${usd.effect_id}`);
  // The exception comes first: in view at 1280×800 without scrolling, above the matched refunds, which are folded away.
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await expect(byHand.getByRole('heading', { name: /In Stripe, not made by Interlock/ })).toBeInViewport();
  // Other journeys of the run refund by hand too, in the same period: the first exception is in view, whichever it is.
  await expect(byHand.locator('tr[data-refund]').first()).toBeInViewport();
  const matched = page.locator('section.reconcile-category', { has: page.getByRole('heading', { name: /^Matched/ }) });
  const byHandTop = (await byHand.boundingBox())!.y;
  expect(byHandTop).toBeLessThan((await matched.boundingBox())!.y);
  await page.screenshot({ path: 'test-results/screenshots/reconciliation-exceptions-1280x800.png', animations: 'disabled' });
  const ours = matched.locator(`tr[data-effect="${usd.effect_id}"]`);
  await expect(ours).toBeHidden();
  await matched.getByText(/^The \d+ matched refunds?$/).click();
  await expect(ours).toContainText(usdRequest);
  await expect(ours).toContainText('$20.00');
  await expect(ours.getByRole('link', { name: 'Receipt' })).toHaveAttribute('href', `/api/items/${usd.effect_id}/receipt`);

  // The page and the API say the same.
  const run = (await (await page.request.get(`/api/reconciliation/${runId}`)).json()) as { result: { by_hand: { rows: { stripe_refund: string; stripe_amount: number }[] } } };
  expect(run.result.by_hand.rows.find((r) => r.stripe_refund === handRefund)?.stripe_amount).toBe(1_234);
  await page.setViewportSize({ width: 1280, height: 900 });
  // A finished run with a refund by hand is scanned by the a11y sweep.
  await shoot(page, 'reconciliation');
  await page.setViewportSize({ width: 390, height: 844 });
  await expectNoHorizontalOverflow(page, 'the reconciliation page at 390 px');
  // A reload shows the same run.
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.reload();
  await expect(page.locator(`tr[data-refund="${handRefund}"]`)).toBeVisible();
});
