import { type APIRequestContext, expect, test } from '@playwright/test';
import { askRefund, createPayment, inboxRow, logIn, SANDBOX_URL, shoot, uniqueId } from './journey-helpers.ts';

// The amount filter names its currency: "Amount from 190" reaches $190.00 and admits no yen item,
// however many yen it is; the chip says which currency the amount is in. At 1280 × 800.

test.use({ viewport: { width: 1280, height: 800 } });

/** A payment in yen, confirmed through the sandbox's Stripe API as a shop's checkout would. */
async function yenPayment(request: APIRequestContext, amountYen: number): Promise<string> {
  const response = await request.post(`${SANDBOX_URL}/v1/payment_intents`, {
    form: { amount: String(amountYen), currency: 'jpy', payment_method: 'pm_card_visa', confirm: 'true' },
    headers: { authorization: 'Bearer sk_test_interlock_sandbox' },
  });
  expect(response.ok(), await response.text()).toBe(true);
  return ((await response.json()) as { id: string }).id;
}

test('"Amount from 190" in dollars keeps $190.00 and no yen item; the chip names the currency', async ({ page, request }) => {
  const ask = async (prefix: string, paymentIntent: string, amount: number) => {
    const requestId = uniqueId(prefix);
    expect((await askRefund(request, { request_id: requestId, payment_intent: paymentIntent, amount, reason: 'Order cancelled' })).status).toBe('QUEUED');
    return requestId;
  };
  const dollars = await ask('usd-190', await createPayment(request, 30_000), 19_000);
  const yen8000 = await ask('jpy-8000', await yenPayment(request, 10_000), 8_000);
  const yen25000 = await ask('jpy-25000', await yenPayment(request, 30_000), 25_000);

  await logIn(page, 'ana');
  await expect(inboxRow(page, yen25000)).toBeVisible();
  await page.getByLabel('Amount from').fill('190');
  await expect(page).toHaveURL(/[?&]currency=usd&min=190\.00(&|$)/);
  await expect(page.locator('.filter-chip')).toHaveText('Amount from $190.00');
  await expect(page.getByLabel('Currency')).toHaveValue('usd');
  await expect(inboxRow(page, dollars)).toBeVisible();
  await expect(inboxRow(page, yen8000)).toHaveCount(0);
  await expect(inboxRow(page, yen25000)).toHaveCount(0);
  // Every row the filter keeps is in dollars: a keyboard run through it never reaches a yen refund.
  await expect(page.locator('li.inbox-row .amount, li.inbox-row .c-amount').filter({ hasText: '¥' })).toHaveCount(0);
  await shoot(page, 'inbox-amount-filter');

  // In yen, the same 190 is ¥190: both yen items pass, the dollar item does not.
  await page.getByLabel('Currency').selectOption('jpy');
  await expect(page.locator('.filter-chip')).toHaveText('Amount from ¥190');
  await expect(inboxRow(page, yen8000)).toBeVisible();
  await expect(inboxRow(page, yen25000)).toBeVisible();
  await expect(inboxRow(page, dollars)).toHaveCount(0);
  // A link from before currencies reads its amount in dollars.
  await page.goto('/?min=190');
  await expect(page.locator('.filter-chip')).toHaveText('Amount from $190.00');
  await expect(inboxRow(page, yen25000)).toHaveCount(0);
});
