import { expect, test } from '@playwright/test';
import { advanceClock, inboxRow, logIn, queuedRefund } from './journey-helpers.ts';

// A countdown is calm: to the minute while the deadline is minutes or hours away (the words change
// once a minute), and to the second only in its last two minutes.

test('countdowns: an SLA reads to the minute when hours away, and to the second in its last two minutes', async ({ page }) => {
  const { requestId } = await queuedRefund(page.request, 8_000, 10_000, 'countdown');
  await logIn(page, 'ana');
  const countdown = inboxRow(page, requestId).locator('.sla-main');
  // ap-leads has 240 minutes: hours away, no seconds.
  await expect(countdown).toHaveText(/^Due in 3h 5\dm$/);
  const first = await countdown.textContent();
  await page.waitForTimeout(2_100);
  await expect(countdown).toHaveText(first ?? '');
  // The deadline at the minute, not the second.
  await expect(inboxRow(page, requestId).locator('.sla-sub time')).toHaveText(/^\d\d:\d\d$|^\d+ \w+, \d\d:\d\d$/);

  // 90 s before the deadline: every second counts.
  await advanceClock(page, 240 * 60_000 - 90_000);
  await expect(countdown).toHaveText(/^Due in (1m \d\ds|\d\ds)$/);
  const near = await countdown.textContent();
  await expect.poll(async () => countdown.textContent(), { timeout: 5_000 }).not.toBe(near);
});
