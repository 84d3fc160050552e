import { devices, expect, type Page, test } from '@playwright/test';
import type { DecisionAnswer, ItemDetail, LiveMessage, SessionInfo } from '../shared/api.ts';
import {
  advanceClock,
  askRefund,
  createPayment,
  expectAccessible,
  expectNoHorizontalOverflow,
  fullPageShot,
  handRefund,
  inboxRow,
  openDispute,
  logIn,
  PAST_SLA_MS,
  personPage,
  personSession,
  queuedRefund,
  SCREENSHOT_DIR,
  shoot,
  shootAndScan,
  shootSwept,
  signIn,
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
  const query = '?currency=usd&min=71.01&max=71.03';
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
  await expect(page.locator('.toast[data-status="COMMITTED"]').filter({ hasText: `Sent $71.03 refund ${c.requestId}` }).locator('.toast-text')).toHaveText(/\. Nothing else waits here\.$/);
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
  await expect(page).toHaveURL(/\/\?currency=usd&min=74\.00&max=74\.50$/);
  await expect.poll(() => rowOrder(page)).toEqual([plain.requestId]);
  await expect(page.locator('.filter-count')).toContainText(/^1 of \d+ shown$/);

  await page.getByLabel('Amount from', { exact: true }).fill('');
  await page.getByLabel('to', { exact: true }).fill('');
  // Why, in one select: each failed rule in the words it failed with, then the other reasons.
  const why = page.getByLabel('Why', { exact: true });
  await expect(why.locator('option', { hasText: /^flag: vip \(\d+\)$/ })).toHaveCount(1);
  await expect(why.locator('option', { hasText: 'no flag that needs a person' })).toHaveCount(0);
  await why.selectOption({ label: (await why.locator('option', { hasText: /^flag: vip/ }).textContent()) ?? '' });
  await page.getByLabel('Agent', { exact: true }).selectOption({ value: 'support-bot' });
  await expect(page).toHaveURL(/\/\?agent=support-bot&rule=no\+flag\+that\+needs\+a\+person$/);
  await expect.poll(() => rowOrder(page)).toEqual([vip.request_id]);
  await shootAndScan(page, 'inbox-filtered');

  // A reload keeps them; so does the link, for someone else of the group.
  await page.reload();
  await expect(page.getByLabel('Why', { exact: true })).toHaveValue('rule:no flag that needs a person');
  await expect.poll(() => rowOrder(page)).toEqual([vip.request_id]);
  const bea = await personSession(browser, 'bea');
  await bea.goto(new URL(page.url()).pathname + new URL(page.url()).search);
  await expect.poll(() => rowOrder(bea)).toEqual([vip.request_id]);
  await bea.context().close();

  // Breached, by its chip: nothing in ap-leads is (a breach moves the item up to finance-manager).
  const breached = page.getByRole('button', { name: /^Breached \d+$/ });
  await breached.click();
  await expect(breached).toHaveAttribute('aria-pressed', 'true');
  await expect(page).toHaveURL(/&trouble=breached$/);
  await expect(page.getByRole('heading', { name: 'No item matches these filters' })).toBeVisible();
  await breached.click();

  // An item opened from the filtered list keeps the filters on its way back.
  await inboxRow(page, vip.request_id).locator('.row-link').click();
  await expect(page).toHaveURL(new RegExp(`/items/${vip.effect_id}\\?agent=support-bot&rule=`));
  await page.getByRole('link', { name: '← Inbox' }).click();
  await expect(page.getByLabel('Why', { exact: true })).toHaveValue('rule:no flag that needs a person');
  await page.getByRole('button', { name: 'Clear filters' }).first().click();
  await expect(page).toHaveURL(/\/$/);
  await expect(inboxRow(page, plain.requestId)).toBeVisible();
});

test('compact density: one line per item with its customer, flag and age, at least 15 in view at 1280 × 800, remembered per person', async ({ page, request }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  // One with trouble first, so its chips are in the picture near the top.
  const stale = await queuedRefund(request, 7_350, 10_000, 'compact-stale');
  await handRefund(request, stale.paymentIntent, 4_000);
  // Who paid, as the charge's billing details name them: the name, else the email, else nothing.
  // Asked before the fifteen below: the server reads each new item's payment in turn, 1.5 s apart,
  // and the names show once their reads are done.
  const named = await askRefund(request, {
    request_id: uniqueId('compact-named'),
    payment_intent: await createPayment(request, 10_000, { customer: { name: 'Mara Quist', email: 'mara@example.com' } }),
    amount: 7_317,
  });
  const emailOnly = await askRefund(request, {
    request_id: uniqueId('compact-email'),
    payment_intent: await createPayment(request, 10_000, { customer: { name: null, email: 'only-email@example.com' } }),
    amount: 7_318,
  });
  const nobody = await askRefund(request, { request_id: uniqueId('compact-nobody'), payment_intent: await createPayment(request, 10_000, { customer: null }), amount: 7_319 });
  // A flag the failed rules do not name is tagged on its line; one they name is not said twice.
  const flagged = await askRefund(request, { request_id: uniqueId('compact-flag'), payment_intent: await createPayment(request, 10_000), amount: 7_316, flags: ['vip', 'repeat_customer'] });
  // Fifteen more lines, asked at once.
  const queued = await Promise.all(Array.from({ length: 15 }, (_, i) => queuedRefund(request, 7_301 + i, 10_000, `compact-${i}`)));
  await logIn(page, 'ana');
  await expect(page.getByRole('button', { name: 'Cards', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await page.getByRole('button', { name: 'Compact', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Compact', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await expect(inboxRow(page, stale.requestId).locator('[data-trouble="stale"]')).toBeVisible({ timeout: STALE_CHIP_MS });
  // Why, in one line: how its rule failed as the escalation worded it, not the rule's name.
  await expect(inboxRow(page, queued[0]!.requestId).locator('.c-why')).toHaveText('Failed rules: over $50.00');
  await expect(inboxRow(page, queued[0]!.requestId).locator('.c-asked')).toHaveText(/^asked (just now|\d+m ago)$/);
  const flaggedRow = inboxRow(page, flagged.request_id);
  await expect(flaggedRow.locator('.c-why-text')).toHaveText('over $50.00 · flag: vip');
  await expect(flaggedRow.locator('.flag-tag')).toHaveText(['⚑ repeat_customer']);
  await expect(inboxRow(page, named.request_id).locator('.c-customer')).toHaveText('Customer: Mara Quist', { timeout: STALE_CHIP_MS });
  await expect(inboxRow(page, emailOnly.request_id).locator('.c-customer')).toHaveText('Customer: only-email@example.com', { timeout: STALE_CHIP_MS });
  await expect(inboxRow(page, nobody.request_id)).toBeVisible();
  await expect(inboxRow(page, nobody.request_id).locator('.c-customer')).toHaveText('');

  const visible = await page.locator('li.inbox-row').evaluateAll((rows) =>
    rows.filter((row) => {
      const box = row.getBoundingClientRect();
      return box.top >= 0 && box.bottom <= window.innerHeight;
    }).length,
  );
  expect(visible).toBeGreaterThanOrEqual(15);
  const heights = await page.locator('li.inbox-row').evaluateAll((rows) => rows.map((row) => row.getBoundingClientRect().height));
  expect(Math.max(...heights)).toBeLessThan(48);
  // The compact inbox is scanned by the a11y sweep.
  await page.screenshot({ path: `${SCREENSHOT_DIR}/compact-inbox-1280.png`, animations: 'disabled' });

  // Remembered for ana in this browser, and only for ana.
  await page.reload();
  await expect(page.getByRole('button', { name: 'Compact', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await logIn(page, 'bea');
  await expect(page.getByRole('button', { name: 'Cards', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await logIn(page, 'ana');
  await expect(page.getByRole('button', { name: 'Compact', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await page.getByRole('button', { name: 'Cards', exact: true }).click();
  // A card names who paid too.
  await expect(inboxRow(page, named.request_id).locator('.row-customer')).toHaveText('Customer: Mara Quist');
  await expect(inboxRow(page, nobody.request_id).locator('.row-customer')).toHaveCount(0);
});

test('trouble before Stripe is read again: a payment disputed when the agent asked is marked from the first render, with the facts read then; trouble filters and sorts', async ({ page, request }) => {
  // A payment already disputed when the agent asks: the facts read for the request say so.
  const disputedPayment = await createPayment(request, 10_000);
  await openDispute(request, disputedPayment);
  const disputed = await askRefund(request, { request_id: uniqueId('trouble-disputed'), payment_intent: disputedPayment, amount: 3_000, flags: ['vip'] });
  expect(disputed.status).toBe('QUEUED');
  const plain = await queuedRefund(request, 7_701, 10_000, 'trouble-plain');
  // The page as it is before the display cache has read Stripe (a new item, a restart): no
  // current facts on the items, no facts messages. The rows show what was journaled.
  await page.routeWebSocket('**/api/live', (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((message) => server.send(message));
    server.onMessage((message) => {
      const data = JSON.parse(String(message)) as LiveMessage;
      if (data.type === 'facts') return;
      if (data.type === 'snapshot') data.items = data.items.map((item) => ({ ...item, current: null }));
      if (data.type === 'item' && data.item) data.item = { ...data.item, current: null };
      ws.send(JSON.stringify(data));
    });
  });
  await logIn(page, 'ana');
  await page.goto('/?min=30&max=77.01');
  const row = inboxRow(page, disputed.request_id);
  await expect(row).toBeVisible();
  // How the rules failed, the flag, the chip and the facts, all from the first render.
  await expect(row.locator('.failed-rules')).toHaveText('flag: vip · disputed');
  await expect(row.locator('.flag-tag')).toHaveText(['⚑ vip']);
  await expect(row.locator('[data-trouble="disputed"]')).toHaveText(/Disputed/);
  await expect(row.locator('.facts-now')).toHaveText(/^\$100\.00 left of \$100\.00 paid · as of \d\d:\d\d, when queued$/);
  await expect(page.locator('.facts-now', { hasText: 'Stripe not read yet' })).toHaveCount(0);
  await expect(row.locator('.row-escalation')).toHaveText(/^asked \d\d:\d\d · waiting \d+(s|m)$/);

  // Trouble is a filter: the Disputed chip keeps the disputed item only, and the address bar keeps it.
  const disputedToggle = page.getByRole('button', { name: /^Disputed \d+$/ });
  await disputedToggle.click();
  await expect(page).toHaveURL(/[?&]trouble=disputed(&|$)/);
  await expect.poll(() => rowOrder(page)).toEqual([disputed.request_id]);
  await shootAndScan(page, 'inbox-trouble-filter');
  // The same screen at phone width, filters open: axe again, and nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  await expectNoHorizontalOverflow(page, 'the trouble filters at 390');
  await expectAccessible(page, 'the trouble filters at 390');
  await page.setViewportSize({ width: 1280, height: 900 });
  await disputedToggle.click();
  // And a sort: most trouble first puts the disputed one above the plain one, whatever the queue order.
  await page.getByLabel('Order', { exact: true }).selectOption('trouble');
  await expect(page).toHaveURL(/[?&]sort=trouble$/);
  const order = await rowOrder(page);
  expect(order.indexOf(disputed.request_id)).toBeLessThan(order.indexOf(plain.requestId));
  await page.getByRole('button', { name: 'Compact', exact: true }).click();
  await expect(row.locator('[data-trouble="disputed"]')).toBeVisible();
  await expect(row.locator('.c-asked')).toHaveText(/^asked (just now|\d+m ago)$/);
  await page.screenshot({ path: `${SCREENSHOT_DIR}/compact-inbox-trouble-1280.png`, animations: 'disabled' });
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
  const bea = await personSession(browser, 'bea');
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
  await fullPageShot(page, `${SCREENSHOT_DIR}/compact-inbox-390.png`);
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

test('breached first, longest overdue first; at the last group there is no "moves up", only how long overdue and who was told; the group an item left is told, the next one reads who missed it', async ({ page, browser, request }) => {
  test.setTimeout(240_000);
  // fm is finance-manager, the last group of the default route. Three SLAs pass, one by one:
  // x1 goes to fm and then breaches there, x2 does the same one SLA later, x3 only reaches fm.
  // fm's page opens her inbox once the three are in it; until then her session moves the clock.
  await signIn(page, 'fm');
  const x1 = await queuedRefund(request, 7_201, 10_000, 'late-1');
  // ana (ap-leads) watches her inbox as x1's deadline passes: she is told where it went and why.
  const ana = await personPage(browser, 'ana');
  await expect(inboxRow(ana, x1.requestId)).toBeVisible();
  await advanceClock(page, PAST_SLA_MS);
  // One toast names the item; items that moved up together (every earlier journey's) are counted in one.
  const alone = new RegExp(`^Moved up: \\$72\\.01 refund ${x1.requestId} went to finance-manager; ap-leads missed its deadline at \\d\\d:\\d\\d`);
  await expect(ana.locator('.toast').filter({ hasText: new RegExp(`${alone.source}|^\\d+ items moved up to finance-manager; ap-leads missed their deadlines`) })).toHaveCount(1);
  await expect(inboxRow(ana, x1.requestId)).toHaveCount(0);
  await shoot(ana, 'inbox-moved-up-notice');
  await ana.context().close();
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
  // x3 moved up and is not due at finance-manager yet: no "Breached" beside "Due in", but who
  // missed it, when, and how long it has waited since it reached a person.
  const moved = inboxRow(page, x3.requestId);
  await expect(moved.locator('[data-trouble="breached"]')).toHaveText(/^⚠Missed by ap-leads at \d\d:\d\d\./);
  await expect(moved.locator('.sla-main')).toContainText('Due in');
  // Hours back, a time may fall on an earlier day than the clock's, and then names it ("asked 5 Dec, 20:19").
  await expect(moved.locator('.row-escalation')).toHaveText(/^Missed by ap-leads at (\d{1,2} [A-Z][a-z]{2}, )?\d\d:\d\d · asked (\d{1,2} [A-Z][a-z]{2}, )?\d\d:\d\d · waiting 4h \d\dm$/);
  await expect(first.locator('.row-escalation')).toHaveText(/^Missed by ap-leads at (\d{1,2} [A-Z][a-z]{2}, )?\d\d:\d\d · asked (\d{1,2} [A-Z][a-z]{2}, )?\d\d:\d\d · waiting 12h \d\dm$/);
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

  // The scoreboard draws in red only the deadlines a group missed: finance-manager received
  // three items ap-leads missed, and is not painted for them.
  const fin = await (await browser.newContext()).newPage();
  await logIn(fin, 'fin');
  const seriesRead = fin.waitForResponse((response) => response.url().includes('/api/scoreboard/series'));
  await fin.goto('/scoreboard');
  const series = (await (await seriesRead).json()) as { breaches_by_group: Record<string, number>; breaches_missed_by_group: Record<string, number> };
  const fmRow = fin.locator('.breach-table tr[data-group="finance-manager"]');
  await expect(fmRow).toHaveAttribute('data-missed', String(series.breaches_missed_by_group['finance-manager'] ?? 0));
  await expect(fmRow.locator('td.breach-received')).toHaveText(String(series.breaches_by_group['finance-manager']));
  expect(series.breaches_missed_by_group['finance-manager'] ?? 0).toBeLessThan(series.breaches_by_group['finance-manager'] ?? 0);
  await expect(fin.locator('.chart', { hasText: 'Escalations by reason and group' })).toContainText('Needs judgment → ap-leads');
  // Finance's scoreboard with breaches is scanned in finance.spec.ts, and at 390 px by the a11y sweep.
  await shootSwept(fin, 'scoreboard-breaches');
  await fin.context().close();
});
