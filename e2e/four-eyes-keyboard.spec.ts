import { expect, test } from '@playwright/test';
import { askRefund, createPayment, inboxRow, logIn, queuedRefund, uniqueId } from './journey-helpers.ts';

// Four-eyes in a keyboard run, at 1280 × 800: a first approval of two moves on to the next item,
// the next item is never one the person approved already, and "Needs my approval" keeps only what
// they may still approve.

test.use({ viewport: { width: 1280, height: 800 } });

test('a first approval moves on, skipping items already approved, and "needs my approval" leaves them out', async ({ page, request }) => {
  // Two two-approver items ($5,123.01 and $5,123.02: from $5,000.00 two people of ap-leads approve) and a plain one.
  const ask = async (amount: number) => {
    const requestId = uniqueId('four-eyes-keys');
    const answer = await askRefund(request, { request_id: requestId, payment_intent: await createPayment(request, 1_000_000), amount, reason: 'Order cancelled before shipping' });
    expect(answer.status).toBe('QUEUED');
    return { requestId, effectId: answer.effect_id };
  };
  const [first, second] = [await ask(512_301), await ask(512_302)];
  const plain = await queuedRefund(request, 8_000, 10_000, 'four-eyes-plain');

  await logIn(page, 'ana');
  await page.goto('/?currency=usd&min=5123.01&max=5123.02');
  await expect(page.locator('li.inbox-row')).toHaveCount(2);
  const order = await page.locator('li.inbox-row').evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.effectId));
  await page.keyboard.press('j');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/items/${order[0]}\\?`));
  await expect(page.getByRole('button', { name: /^Approve/ })).toBeVisible();

  // The first approval of two: the page goes on to the next item at once, with a toast saying it waits for someone else.
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog')).toContainText('nothing is sent');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/items/${order[1]}\\?`));
  await expect(page.locator('.toast').filter({ hasText: '(1 of 2): it waits for a second approver' })).toBeVisible();

  // The second: the only other item in this list is one ana approved already, so the list is done.
  await expect(page.getByRole('button', { name: /^Approve/ })).toBeVisible();
  await page.keyboard.press('a');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/\?currency=usd/);
  await expect(page.locator('.toast').filter({ hasText: 'Nothing else waits here' })).toBeVisible();

  // "Needs my approval": both items wait for someone else now; the plain item still needs ana.
  await page.goto('/');
  await page.getByRole('button', { name: /Needs my approval/ }).click();
  await expect(page).toHaveURL(/[?&]needs=me/);
  await expect(inboxRow(page, plain.requestId)).toBeVisible();
  await expect(inboxRow(page, first.requestId)).toHaveCount(0);
  await expect(inboxRow(page, second.requestId)).toHaveCount(0);
  await page.getByRole('button', { name: /Needs my approval/ }).click();
  await expect(inboxRow(page, first.requestId)).toContainText('you approved; needs someone else');
});
