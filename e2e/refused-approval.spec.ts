import { expect, test } from '@playwright/test';
import { askRefund, createPayment, expectAccessible, openDispute, shoot, uniqueId, logIn } from './journey-helpers.ts';

// A disputed payment: approving the original can only be refused and no repair is offered, so the
// page shows the approval with why and does not let it be pressed; `a` says the same. At 1280 × 800.

test.use({ viewport: { width: 1280, height: 800 } });

test('a disputed item offers no pressable "Approve the original", and says why', async ({ page, request }) => {
  const paymentIntent = await createPayment(request, 10_000);
  await openDispute(request, paymentIntent);
  const answer = await askRefund(request, { request_id: uniqueId('refused'), payment_intent: paymentIntent, amount: 8_000, reason: 'Order arrived broken' });
  expect(answer.status).toBe('QUEUED');

  await logIn(page, 'ana');
  await page.goto(`/items/${answer.effect_id}`);
  const panel = page.locator('.decision-panel');
  await expect(panel.locator('.decide-warning')).toContainText('the payment is disputed now');
  const original = panel.getByRole('button', { name: /Approve the original \$80\.00/ });
  await expect(original).toBeDisabled();
  await expect(original).toHaveAccessibleDescription(/disputed.*would be refused, so it is not offered/);
  await original.click({ force: true });
  await expect(page.getByRole('dialog')).toHaveCount(0);
  // The key says why it did nothing; rejecting is still offered.
  await page.locator('#page-title').focus();
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await expect(page.locator('.item-side .key-notice')).toContainText('“a” did nothing: approving the original would be refused, so it is not offered: the payment is disputed now.');
  await expect(panel.getByRole('button', { name: 'Reject' })).toBeEnabled();
  await expectAccessible(page, 'item with a refused approval', '.item-side');
  await shoot(page, 'item-refused-not-offered');
});
