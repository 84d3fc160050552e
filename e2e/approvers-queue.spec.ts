import { devices, expect, type Page, test } from '@playwright/test';
import type { DecisionAnswer, ItemDetail, SessionInfo } from '../shared/api.ts';
import {
  advanceClock,
  askRefund,
  createPayment,
  expectAccessible,
  expectNoHorizontalOverflow,
  handRefund,
  inboxRow,
  logIn,
  PAST_SLA_MS,
  personPage,
  queuedRefund,
  SCREENSHOT_DIR,
  shoot,
  shootAndScan,
  uniqueId,
  STALE_CHIP_MS,
} from './journey-helpers.ts';

// Working a queue fast: the next item opens after a decision, filters live in the address bar,
// a compact density shows a dozen items at once, arrivals announce themselves without moving
// rows, the order puts breached items first, and a phone gets the same without sideways
// scrolling. The last test moves the application clock three SLAs forward, so it goes last.
test.describe.configure({ timeout: 120_000 });

/** The request ids of the inbox rows, top to bottom. */
async function rowOrder(page: Page): Promise<string[]> {
  return page.locator('li.inbox-row').evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.requestId ?? ''));
}

test('after a decision the next item of the filtered queue opens, with a toast naming what was done', async ({ page, request }) => {
  const a = await queuedRefund(request, 7_101, 10_000, 'next-a');
  const b = await queuedRefund(request, 7_102, 10_000, 'next-b');
  const c = await queuedRefund(request, 7_103, 10_000, 'next-c');
  await logIn(page, 'ana');
  const query = '?min=71.01&max=71.03';
  await page.goto(`/${query}`);
  await expect.poll(() => rowOrder(page)).toEqual([a.requestId, b.requestId, c.requestId]);

  // a on the focused row asks for the confirmation on that item's page, facts behind it.
  await page.keyboard.press('j');
  await expect(inboxRow(page, a.requestId).locator('.row-link')).toBeFocused();
  await page.keyboard.press('a');
  await expect(page).toHaveURL(new RegExp(`/items/${a.effectId}\\${query}$`));
  await expect(page.getByRole('dialog', { name: 'Approve and send $71.01?' })).toBeVisible();
  await page.keyboard.press('Enter');
  await expect(page.locator('.toast[data-status="COMMITTED"]').filter({ hasText: `Sent $71.01 refund ${a.requestId}` })).toBeVisible();
  await expect(page).toHaveURL(new RegExp(`/items/${b.effectId}\\${query}$`));
  await expect(page.getByRole('heading', { level: 1 })).toContainText('$71.02');
  await expect(page.locator('#page-title')).toBeFocused();

  await page.keyboard.press('r');
  const reject = page.getByRole('dialog', { name: 'Reject the $71.02 refund?' });
  await reject.getByLabel('Why? The agent is told this.').fill('Already refunded on the phone');
  await reject.getByRole('button', { name: 'Reject $71.02 refund' }).click();
  await expect(page.locator('.toast[data-status="REJECTED"]').filter({ hasText: `Rejected ${b.requestId}` })).toBeVisible();
  await expect(page).toHaveURL(new RegExp(`/items/${c.effectId}\\${query}$`));
  await shootAndScan(page, 'item-after-decision');

  // The last one: back to the filtered inbox, which says nothing else matches.
  await page.getByRole('button', { name: 'Approve $71.03' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Send $71.03 refund' }).click();
  await expect(page.locator('.toast[data-status="COMMITTED"]').filter({ hasText: `Sent $71.03 refund ${c.requestId}. Nothing else waits here.` })).toBeVisible();
  await expect(page).toHaveURL(new RegExp(`/\\${query}$`));
  await expect(page.getByRole('heading', { name: /^(No item matches these filters|Nothing waits for you)$/ })).toBeVisible();
});

test('filters live in the address bar: a reload and a shared link keep them, and an item opened from them goes back to them', async ({ page, browser, request }) => {
  const plain = await queuedRefund(request, 7_401, 10_000, 'filter-plain');
  const paymentIntent = await createPayment(request, 10_000);
  const vip = await askRefund(request, { request_id: uniqueId('filter-vip'), payment_intent: paymentIntent, amount: 3_000, flags: ['vip'] });
  expect(vip.status).toBe('QUEUED');
  await logIn(page, 'ana');
  await expect(inboxRow(page, plain.requestId)).toBeVisible();

  await page.getByLabel('Amount from', { exact: true }).fill('74');
  await page.getByLabel('to', { exact: true }).fill('74.5');
  await expect(page).toHaveURL(/\/\?min=74&max=74\.5$/);
  await expect.poll(() => rowOrder(page)).toEqual([plain.requestId]);
  await expect(page.locator('.filter-count')).toContainText(/^1 of \d+ shown$/);

  await page.getByLabel('Amount from', { exact: true }).fill('');
  await page.getByLabel('to', { exact: true }).fill('');
  await page.getByLabel('Failed rule', { exact: true }).selectOption('no flag that needs a person');
  await page.getByLabel('Agent', { exact: true }).selectOption('support-bot');
  await page.getByLabel('Reason', { exact: true }).selectOption('needs_judgment');
  await expect(page).toHaveURL(/\/\?agent=support-bot&rule=no\+flag\+that\+needs\+a\+person&reason=needs_judgment$/);
  await expect.poll(() => rowOrder(page)).toEqual([vip.request_id]);
  await shootAndScan(page, 'inbox-filtered');

  // A reload keeps them; so does the link, for someone else of the group.
  await page.reload();
  await expect(page.getByLabel('Failed rule', { exact: true })).toHaveValue('no flag that needs a person');
  await expect.poll(() => rowOrder(page)).toEqual([vip.request_id]);
  const bea = await personPage(browser, 'bea');
  await bea.goto(new URL(page.url()).pathname + new URL(page.url()).search);
  await expect.poll(() => rowOrder(bea)).toEqual([vip.request_id]);
  await bea.context().close();

  // Breached only: nothing in ap-leads is (a breach moves the item up to finance-manager).
  await page.getByLabel('Breached only', { exact: true }).check();
  await expect(page).toHaveURL(/&breached=1$/);
  await expect(page.getByRole('heading', { name: 'No item matches these filters' })).toBeVisible();
  await page.getByLabel('Breached only', { exact: true }).uncheck();

  // An item opened from the filtered list keeps the filters on its way back.
  await inboxRow(page, vip.request_id).locator('.row-link').click();
  await expect(page).toHaveURL(new RegExp(`/items/${vip.effect_id}\\?agent=support-bot&rule=`));
  await page.getByRole('link', { name: '← Inbox' }).click();
  await expect(page.getByLabel('Reason', { exact: true })).toHaveValue('needs_judgment');
  await page.getByRole('button', { name: 'Clear filters' }).first().click();
  await expect(page).toHaveURL(/\/$/);
  await expect(inboxRow(page, plain.requestId)).toBeVisible();
});

test('compact density: one line per item, at least 12 in view at 1280 × 800, remembered per person', async ({ page, request }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  // One with trouble first, so its chips are in the picture near the top.
  const stale = await queuedRefund(request, 7_350, 10_000, 'compact-stale');
  await handRefund(request, stale.paymentIntent, 4_000);
  const queued = [];
  for (let i = 0; i < 13; i++) queued.push(await queuedRefund(request, 7_301 + i, 10_000, `compact-${i}`));
  await logIn(page, 'ana');
  await expect(page.getByRole('button', { name: 'Cards', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await page.getByRole('button', { name: 'Compact', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Compact', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await expect(inboxRow(page, stale.requestId).locator('[data-trouble="stale"]')).toBeVisible({ timeout: STALE_CHIP_MS });
  // Why, in one line: how its rule failed as the escalation worded it, not the rule's name.
  await expect(inboxRow(page, queued[0]!.requestId).locator('.c-why')).toHaveText('Failed rules: over $50.00');

  const visible = await page.locator('li.inbox-row').evaluateAll((rows) =>
    rows.filter((row) => {
      const box = row.getBoundingClientRect();
      return box.top >= 0 && box.bottom <= window.innerHeight;
    }).length,
  );
  expect(visible).toBeGreaterThanOrEqual(12);
  const heights = await page.locator('li.inbox-row').evaluateAll((rows) => rows.map((row) => row.getBoundingClientRect().height));
  expect(Math.max(...heights)).toBeLessThan(48);
  await expectAccessible(page, 'compact inbox');
  await page.screenshot({ path: `${SCREENSHOT_DIR}/compact-inbox-1280.png`, animations: 'disabled' });

  // Remembered for ana in this browser, and only for ana.
  await page.reload();
  await expect(page.getByRole('button', { name: 'Compact', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await logIn(page, 'bea');
  await expect(page.getByRole('button', { name: 'Cards', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await logIn(page, 'ana');
  await expect(page.getByRole('button', { name: 'Compact', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await page.getByRole('button', { name: 'Cards', exact: true }).click();
});

test('a new item announces itself (a toast, the tab title) and nothing already shown moves until asked', async ({ page, browser, request }) => {
  const a = await queuedRefund(request, 7_501, 10_000, 'arrive-a');
  const b = await queuedRefund(request, 7_502, 10_000, 'arrive-b');
  await logIn(page, 'ana');
  await page.goto('/?min=75.01&max=75.03');
  await expect.poll(() => rowOrder(page)).toEqual([a.requestId, b.requestId]);
  const count = Number((await page.title()).match(/^\((\d+)\) Inbox/)?.[1]);
  const firstTop = (await inboxRow(page, a.requestId).boundingBox())?.y;

  const c = await queuedRefund(request, 7_503, 10_000, 'arrive-c');
  await expect(page.locator('.toast').filter({ hasText: `New: $75.03 refund ${c.requestId}` })).toBeVisible();
  await expect(page).toHaveTitle(`(${count + 1}) Inbox · Interlock`);
  await expect.poll(() => rowOrder(page)).toEqual([a.requestId, b.requestId, c.requestId]);
  expect((await inboxRow(page, a.requestId).boundingBox())?.y).toBe(firstTop);

  // bea approves a just as someone refunds it by hand: her approval reaches the facts check
  // before the inbox can show a again on the new facts (that takes a webhook and a paced read of
  // Stripe), so it is refused as stale and comes back with a later deadline, and now sorts last.
  // ana's list keeps it where she saw it and says the order changed.
  const bea = await personPage(browser, 'bea');
  const beaSession = (await (await bea.request.get('/api/session')).json()) as SessionInfo;
  const seen = ((await (await bea.request.get(`/api/items/${a.effectId}`)).json()) as ItemDetail).item?.escalation;
  await handRefund(request, a.paymentIntent, 1_000);
  const approved = await bea.request.post(`/api/items/${a.effectId}/decisions`, { data: { action: 'approve', escalation: seen }, headers: { 'x-csrf-token': beaSession.csrf_token } });
  expect(((await approved.json()) as DecisionAnswer).status).toBe('REFUSED:stale_premise');
  await bea.context().close();
  const bar = page.locator('.queue-bar');
  await expect(bar).toContainText('changed place');
  expect(await rowOrder(page)).toEqual([a.requestId, b.requestId, c.requestId]);
  expect((await inboxRow(page, a.requestId).boundingBox())?.y).toBe(firstTop);
  await shoot(page, 'inbox-order-changed');
  await bar.getByRole('button', { name: 'Put in order' }).click();
  await expect.poll(() => rowOrder(page)).toEqual([b.requestId, c.requestId, a.requestId]);
  await expect(bar).toHaveCount(0);
});

test('a phone at 390 px: the diff before the buttons, a small offline banner, nothing wider than the screen, no key hints on touch', async ({ browser, request }) => {
  const { paymentIntent, requestId, effectId } = await queuedRefund(request, 7_601, 10_000, 'phone');
  await handRefund(request, paymentIntent, 4_000);
  const context = await browser.newContext({ ...devices['Pixel 7'], viewport: { width: 390, height: 844 } });
  const page = await context.newPage();
  // The live feed can be cut on demand, to see the offline banner.
  let cut = false;
  await page.routeWebSocket('**/api/live', (ws) => {
    if (cut) {
      ws.close();
      return;
    }
    const server = ws.connectToServer();
    ws.onMessage((message) => server.send(message));
    server.onMessage((message) => ws.send(message));
    const timer = setInterval(() => {
      if (!cut) return;
      clearInterval(timer);
      ws.close();
    }, 100);
  });
  await logIn(page, 'ana');
  await expect(inboxRow(page, requestId).locator('[data-trouble="stale"]')).toBeVisible({ timeout: STALE_CHIP_MS });
  await expectNoHorizontalOverflow(page, 'the inbox at 390');
  await expect(page.locator('.hint')).toBeHidden();
  await page.getByRole('button', { name: 'Compact', exact: true }).click();
  await expectNoHorizontalOverflow(page, 'the compact inbox at 390');
  await page.screenshot({ path: `${SCREENSHOT_DIR}/compact-inbox-390.png`, fullPage: true, animations: 'disabled' });
  await page.getByRole('button', { name: 'Cards', exact: true }).click();

  await page.goto(`/items/${effectId}`);
  const facts = await page.locator('.facts-panel').boundingBox();
  const decision = await page.locator('.decision-panel').boundingBox();
  expect(facts && decision && facts.y < decision.y).toBe(true);
  await expect(page.locator('.key-hint').first()).toBeHidden();
  await expectNoHorizontalOverflow(page, 'the item at 390');
  await page.getByRole('button', { name: 'Reject', exact: true }).click();
  await expectNoHorizontalOverflow(page, 'the reject dialog at 390');
  await page.keyboard.press('Escape');

  cut = true;
  const banner = page.locator('.connection-banner');
  await expect(banner).toBeVisible();
  expect((await banner.boundingBox())?.height).toBeLessThanOrEqual(56);
  await expectNoHorizontalOverflow(page, 'the offline banner at 390');
  await page.screenshot({ path: `${SCREENSHOT_DIR}/item-offline-390.png`, animations: 'disabled' });
  await context.close();
});

test('breached first, longest overdue first; at the last group there is no "moves up", only how long overdue and who was told', async ({ page, request }) => {
  // fm is finance-manager, the last group of the default route. Three SLAs pass, one by one:
  // x1 goes to fm and then breaches there, x2 does the same one SLA later, x3 only reaches fm.
  await logIn(page, 'fm');
  const x1 = await queuedRefund(request, 7_201, 10_000, 'late-1');
  await advanceClock(page, PAST_SLA_MS);
  const x2 = await queuedRefund(request, 7_202, 10_000, 'late-2');
  await advanceClock(page, PAST_SLA_MS);
  const x3 = await queuedRefund(request, 7_203, 10_000, 'late-3');
  await page.goto('/?min=72.01&max=72.03');
  await expect.poll(() => rowOrder(page)).toEqual([x1.requestId, x2.requestId]);
  await advanceClock(page, PAST_SLA_MS);
  await expect(inboxRow(page, x3.requestId)).toBeVisible();
  await page.reload();
  await expect.poll(() => rowOrder(page)).toEqual([x1.requestId, x2.requestId, x3.requestId]);

  const first = inboxRow(page, x1.requestId);
  await expect(first.locator('[data-trouble="breached"]')).toHaveText(/Breached · overdue 4h \d\dm/);
  await expect(first.locator('.sla-main')).toContainText('Overdue by');
  await expect(first).not.toContainText('moves up');
  await expect(inboxRow(page, x3.requestId).locator('[data-trouble="breached"]')).toHaveText(/^⚠Breached\./);
  await shootAndScan(page, 'inbox-breached-order');

  await first.locator('.row-link').click();
  const why = page.locator('.why-panel');
  await expect(why.locator('.sla-main')).toHaveText(/Overdue by 4h \d\dm$/);
  await expect(why.locator('.sla-sub')).toContainText(/^last group of its chain · (nobody was told|told: )/);
  await expect(page.locator('.item-page')).not.toContainText('moves up');
  const steps = page.locator('.timeline-step[data-kind="ESCALATED"] .timeline-title');
  await expect(steps.nth(1)).toContainText('Moved up after the SLA passed');
  await expect(steps.nth(2)).toContainText('Deadline missed at finance-manager');
  await shoot(page, 'item-breached-top');
});
