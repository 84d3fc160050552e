import { expect, test } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { expectAccessible, logIn, queuedRefund, SCREENSHOT_DIR } from './journey-helpers.ts';

// On a phone the session warning still says how long is left: the countdown is not hidden with the
// connection banner's long sentence.

test.use({ viewport: { width: 390, height: 844 } });

test('on a phone, a session about to end shows its countdown', async ({ page, request }) => {
  const { effectId } = await queuedRefund(request, 5_700, 10_000, 'phone-expiry');
  // The live feed through a relay, to say what the server says two minutes before the idle limit.
  let send: ((message: string) => void) | null = null;
  let nowMs = 0;
  await page.routeWebSocket('**/api/live', (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((message) => server.send(message));
    server.onMessage((message) => {
      const said = JSON.parse(String(message)) as { now_ms?: number };
      if (typeof said.now_ms === 'number') nowMs = said.now_ms;
      ws.send(message);
    });
    send = (message) => ws.send(message);
  });
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  await expect(page.getByRole('button', { name: 'Approve $57.00' })).toBeVisible();
  await expect.poll(() => send !== null).toBe(true);
  send!(JSON.stringify({ type: 'session', warning: true, ends_in_ms: 110_000, renewable: true, now_ms: nowMs }));

  const banner = page.getByTestId('session-ending');
  await expect(banner.locator('.session-left')).toBeVisible();
  await expect(banner.locator('.session-left')).toHaveText(/^1m \d\ds$/);
  await expect(banner).toContainText(/It ends in 1m \d\ds: after that nothing is sent under your name/);
  await expect(banner.getByRole('button', { name: 'Stay signed in' })).toBeVisible();
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOT_DIR}/item-session-ending-390.png`, animations: 'disabled' });
  await expectAccessible(page, 'the session warning on a phone', '[data-testid="session-ending"]');
});
