import { expect, test, type WebSocketRoute } from '@playwright/test';
import { askRefund, createPayment, inboxRow, logIn, shootAndScan, uniqueId } from './journey-helpers.ts';

test('the live feed drops: a banner says so, it reconnects, and the snapshot brings what was missed', async ({ page, request }) => {
  let allow = true;
  let current: WebSocketRoute | null = null;
  await page.routeWebSocket('**/api/live', (ws) => {
    if (!allow) {
      ws.close({ code: 1011, reason: 'test: server unreachable' });
      return;
    }
    current = ws;
    ws.connectToServer();
  });
  await logIn(page, 'ana');

  allow = false;
  await (current as WebSocketRoute | null)?.close({ code: 1006, reason: 'test: connection lost' });
  const banner = page.getByRole('status').filter({ hasText: 'Connection lost' });
  await expect(banner).toBeVisible();
  await expect(page.locator('.live-indicator')).toContainText('Reconnecting');

  // While the feed is down, an agent asks for a refund: nothing arrives yet.
  const paymentIntent = await createPayment(request, 10_000);
  const requestId = uniqueId('live');
  await askRefund(request, { request_id: requestId, payment_intent: paymentIntent, amount: 9_000 });
  await expect(inboxRow(page, requestId)).toHaveCount(0);
  // The inbox itself is scanned by the a11y sweep: here, what the lost feed adds to it.
  await shootAndScan(page, 'inbox-reconnecting', '.connection-banner, .live-indicator');

  // The click must be what reconnects: wait until the automatic retry is seconds away, or on a
  // busy machine it can win the race and take the banner (and its button) away first.
  await expect(banner).toContainText(/Reconnecting in ([4-9]|1\d)s/, { timeout: 30_000 });
  allow = true;
  await banner.getByRole('button', { name: 'Reconnect now' }).click();
  await expect(inboxRow(page, requestId)).toBeVisible();
  await expect(banner).toHaveCount(0);
  await expect(page.locator('.live-indicator')).toContainText('Live');
});
