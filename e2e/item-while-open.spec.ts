import { expect, type Page, test } from '@playwright/test';
import {
  createPayment,
  askRefund,
  expectAccessible,
  handRefund,
  logIn,
  personSession,
  queuedRefund,
  shoot,
  shootAndScan,
  STALE_CHIP_MS,
  uniqueId,
} from './journey-helpers.ts';

// An item page stays true while it is open: someone else's decision is named at once and takes
// the buttons away, a repair that arrives shows by itself, one refund is offered once, and a
// session that ends says so (before, with "Stay signed in", and at the end) and that nothing
// was sent. At 1280 pixels, as an approver works.
test.describe.configure({ timeout: 90_000 });
test.use({ viewport: { width: 1280, height: 800 } });

/** How soon the page must say what happened once the live feed told it: a read of the item, no click. */
const AT_ONCE_MS = 5_000;

test('someone else decides while the page is open: the notice names who, what, when and why at once, and the buttons go', async ({ page, browser, request }) => {
  const { effectId } = await queuedRefund(request, 5_600, 10_000, 'named');
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  await expect(page.getByRole('button', { name: 'Approve $56.00' })).toBeVisible();
  await expect(page.locator('.state-badge')).toHaveText('Waiting for a decision');

  const bea = await personSession(browser, 'bea');
  await bea.goto(`/items/${effectId}`);
  await bea.getByRole('button', { name: 'Reject', exact: true }).click();
  await bea.getByLabel('Why? The agent is told this.').fill('Customer already got store credit');
  await bea.getByRole('dialog').getByRole('button', { name: 'Reject $56.00 refund' }).click();
  await expect(bea.locator('.toast[data-status="REJECTED"]')).toBeVisible();

  // No click on ana's page: it says who decided, what and why, and offers nothing to decide.
  const notice = page.locator('.live-change[data-news="decided"]');
  await expect(notice.getByTestId('race-notice')).toHaveText(/^Bea Novak rejected it at \d\d:\d\d: “Customer already got store credit”$/, { timeout: AT_ONCE_MS });
  await expect(notice).toContainText('Nothing was sent from this page.');
  await expect(page.getByRole('button', { name: /Approve/ })).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Reject', exact: true })).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Show the current state' })).toHaveCount(0);
  await expect(page.locator('.state-badge')).not.toHaveText('Waiting for a decision');
  await expect(page.locator('.decision-panel')).toContainText('Nothing to decide');
  // The shortcut is gone with the button.
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await shootAndScan(page, 'item-decided-elsewhere');
  await bea.context().close();
});

test('a confirmation open when someone else decides is closed, so nothing is confirmed on what the page no longer is', async ({ page, browser, request }) => {
  const { effectId } = await queuedRefund(request, 5_700, 10_000, 'open-dialog');
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  await expect(page.getByRole('button', { name: 'Approve $57.00' })).toBeVisible();
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog', { name: 'Approve and send $57.00?' })).toBeVisible();

  const bea = await personSession(browser, 'bea');
  await bea.goto(`/items/${effectId}`);
  await bea.getByRole('button', { name: 'Approve $57.00' }).click();
  await bea.getByRole('dialog').getByRole('button', { name: 'Send $57.00 refund' }).click();
  await expect(bea.locator('.toast[data-status="COMMITTED"]')).toBeVisible();

  await expect(page.getByRole('dialog')).toHaveCount(0, { timeout: AT_ONCE_MS });
  await expect(page.locator('.live-change').getByTestId('race-notice')).toHaveText(/^Bea Novak approved it at \d\d:\d\d\.$/);
  await expect(page.locator('.state-badge')).toHaveText(/Done/);
  await bea.context().close();
});

test('a repair that arrives while the page is open shows by itself, first, with no click', async ({ page, request }) => {
  const { paymentIntent, effectId } = await queuedRefund(request, 8_000, 10_000, 'arrives');
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  await expect(page.getByRole('button', { name: 'Approve $80.00' })).toBeVisible();

  await handRefund(request, paymentIntent, 3_000);
  const repair = page.getByRole('button', { name: 'Accept repair: Refund $70.00, what is left of $100.00' });
  await expect(repair).toBeVisible({ timeout: STALE_CHIP_MS });
  await expect(repair).toHaveClass(/primary/);
  await expect(page.locator('.live-change[data-news="reshown"]')).toContainText('The facts changed while you were looking');
  await expect(page.getByRole('button', { name: 'Show the current state' })).toHaveCount(0);
  await expect(page.locator('tr[data-fact="left_to_refund"]')).toContainText('$100.00 → $70.00');
  await shoot(page, 'item-repair-arrived');
});

test('a payment refunded outside Interlock that still covers the request offers one approval, not a repair and an approval', async ({ page, request }) => {
  const paymentIntent = await createPayment(request, 20_000);
  const requestId = uniqueId('fits');
  const asked = await askRefund(request, { request_id: requestId, payment_intent: paymentIntent, amount: 6_000, reason: 'Damaged lid' });
  expect(asked.status).toBe('QUEUED');
  await logIn(page, 'ana');
  await page.goto(`/items/${asked.effect_id}`);
  await expect(page.getByRole('button', { name: 'Approve $60.00' })).toBeVisible();

  await handRefund(request, paymentIntent, 5_000);
  const panel = page.locator('.decision-panel');
  await expect(panel.locator('#fits-why')).toContainText('$60.00 still fits', { timeout: STALE_CHIP_MS });
  // One button sends the $60.00, whatever it is called: no "Accept repair" beside "Approve".
  await expect(panel.getByRole('button', { name: /^Approve \$60\.00/ })).toHaveCount(1);
  await expect(panel.getByRole('button', { name: /Accept repair/ })).toHaveCount(0);
  await expect(panel.getByRole('button', { name: /^Approve \$60\.00/ })).toHaveClass(/primary/);
  // A short label; the caveat is in the words beside it, not on the button.
  await expect(panel.locator('.approve-button .decide-main')).toHaveText('Approve $60.00 on the facts now');
  await expect(panel.locator('#fits-why')).toContainText('unless the refund made outside Interlock was this one');
  await shootAndScan(page, 'item-still-fits');

  // Two keys, as any approval: a, then Enter.
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog', { name: 'Approve and send $60.00 on the facts now?' })).toBeVisible();
  await page.keyboard.press('Enter');
  const toast = page.locator('.toast[data-status="COMMITTED"]').filter({ hasText: `Sent $60.00 refund ${requestId}` });
  await expect(toast).toContainText('an approval on the facts now');
  await expect(toast).not.toContainText('repair');

  // The scoreboard tells it as what it was: an approval on the facts now, never a repair.
  await page.goto('/scoreboard');
  const row = page.getByRole('row', { name: /^Approvals on the facts now/ });
  await expect(row.locator('.figure-table-value')).not.toHaveText('0');
});

/** ana's page with its live feed through a relay that can add what the server would say, and close it as the server would. */
async function relayedPage(page: Page) {
  const relay: { send: ((message: string) => void) | null; close: ((code: number, reason: string) => void) | null; nowMs: number } = { send: null, close: null, nowMs: 0 };
  await page.routeWebSocket('**/api/live', (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((message) => server.send(message));
    server.onMessage((message) => {
      const { now_ms: nowMs } = JSON.parse(String(message)) as { now_ms?: number };
      if (typeof nowMs === 'number') relay.nowMs = nowMs;
      ws.send(message);
    });
    relay.send = (message) => ws.send(message);
    relay.close = (code, reason) => ws.close({ code, reason });
  });
  return relay;
}

test('a session about to end warns with "Stay signed in", and at its end the page says so at once, with nothing sent', async ({ page, request }) => {
  const { requestId, effectId } = await queuedRefund(request, 5_800, 10_000, 'expiry');
  const relay = await relayedPage(page);
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  await expect(page.getByRole('button', { name: 'Approve $58.00' })).toBeVisible();
  const warn = () => relay.send?.(JSON.stringify({ type: 'session', warning: true, ends_in_ms: 110_000, renewable: true, now_ms: relay.nowMs }));

  // What the server says 2 minutes before the idle limit: the page warns, with the way to stay.
  warn();
  const banner = page.getByTestId('session-ending');
  await expect(banner).toContainText('Your session is about to end for lack of activity.');
  await expect(banner).toContainText(/It ends in 1m \d\ds/);
  await shootAndScan(page, 'item-session-ending', '[data-testid="session-ending"]');
  const kept = page.waitForRequest((r) => r.url().endsWith('/api/session') && r.method() === 'GET');
  await banner.getByRole('button', { name: 'Stay signed in' }).click();
  await kept;
  await expect(banner).toHaveCount(0);

  // At its end the server closes the feed as expired: the page says so at once, and no decision is offered.
  warn();
  await expect(banner).toBeVisible();
  relay.close?.(4401, 'session_expired');
  await expect(page.getByRole('heading', { name: 'Log in to the refund inbox' })).toBeVisible({ timeout: AT_ONCE_MS });
  await expect(page.locator('[data-notice="session_expired"]')).toContainText('Your session expired: nothing was sent under your name after it ended.');
  await expect(page.getByRole('button', { name: /Approve/ })).toHaveCount(0);
  await shoot(page, 'login-session-ended');
  test.info().annotations.push({ type: 'request', description: requestId });
});

test('a decision refused because the session expired says which one, and that nothing was sent', async ({ page, request }) => {
  const { requestId, effectId } = await queuedRefund(request, 5_900, 10_000, 'refused-expired');
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  // The server answers session_expired once the idle limit has passed; the page is told so by the decision itself.
  await page.route(`**/api/items/${effectId}/decisions`, (route) =>
    route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: { code: 'session_expired', message: 'your session expired; log in again' } }) }),
  );
  await expect(page.getByRole('button', { name: 'Approve $59.00' })).toBeVisible();
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog', { name: 'Approve and send $59.00?' })).toBeVisible();
  await page.keyboard.press('Enter');
  await expect(page.locator('[data-notice="session_expired"]')).toHaveText(
    `Your session had expired, so your approval of $59.00 (request ${requestId}) was not recorded: nothing was sent. Log in again to decide it.`,
  );
  await expectAccessible(page, 'log-in page after a refused decision');
});

test('a decision made offline says nothing was sent', async ({ page, context, request }) => {
  const { effectId } = await queuedRefund(request, 6_100, 10_000, 'offline');
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  await expect(page.getByRole('button', { name: 'Approve $61.00' })).toBeVisible();
  await context.setOffline(true);
  await page.keyboard.press('a');
  const dialog = page.getByRole('dialog', { name: 'Approve and send $61.00?' });
  await page.keyboard.press('Enter');
  await expect(dialog.getByRole('alert')).toContainText('You are offline: nothing was sent.');
  await shoot(page, 'item-offline-decision');
  await context.setOffline(false);
});
