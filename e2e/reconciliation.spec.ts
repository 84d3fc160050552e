import { expect, test } from '@playwright/test';
import { askRefund, createPayment, expectAccessible, expectNoHorizontalOverflow, PASSWORD, SANDBOX_URL, shoot, uniqueId } from './journey-helpers.ts';

// Finance opens a reconciliation with Stripe and finds a refund made by hand on a payment
// Interlock has seen, with its Stripe id and amount, next to the refund Interlock made.

test('finance runs a reconciliation and sees a refund made by hand in Stripe, with its id and amount, and the refund Interlock made matched', async ({ page, request }) => {
  test.setTimeout(90_000);
  const paymentIntent = await createPayment(request, 10_000);
  const requestId = uniqueId('reconcile');
  const answer = await askRefund(request, { request_id: requestId, payment_intent: paymentIntent, amount: 2_000, reason: 'Parcel arrived damaged' });
  expect(answer.status).toBe('COMMITTED');
  const planted = await request.post(`${SANDBOX_URL}/_sandbox/hand-refunds`, { data: { paymentIntent, amountCents: 1_234 } });
  expect(planted.ok(), await planted.text()).toBe(true);
  const handRefund = ((await planted.json()) as { id: string }).id;

  const login = await page.request.post('/api/session', { data: { name: 'fin', password: PASSWORD } });
  expect(login.ok(), await login.text()).toBe(true);
  await page.goto('/scoreboard');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Reconciliation' }).click();
  await expect(page.getByRole('heading', { name: 'Reconciliation', level: 1 })).toBeVisible();
  // The period picker starts at the last seven days, today included.
  await expect(page.getByLabel('First day')).not.toHaveValue('');
  await expect(page.getByLabel('Last day (included)')).not.toHaveValue('');
  await page.getByRole('button', { name: 'Compare with Stripe' }).click();

  const status = page.getByRole('status').filter({ hasText: 'payments listed' });
  await expect(status).toBeVisible();
  await expect(page.locator('.reconcile-run .badge', { hasText: 'Done' })).toBeVisible({ timeout: 30_000 });
  await expect(status).toContainText(/(\d+) of \1 payments listed/);
  expect(new URL(page.url()).searchParams.get('run')).toMatch(/^rec_[0-9a-f]{16}$/);

  const byHand = page.locator('section.reconcile-category', { has: page.getByRole('heading', { name: /In Stripe, not made by Interlock/ }) });
  const row = byHand.locator(`tr[data-refund="${handRefund}"]`);
  await expect(row).toContainText(handRefund);
  await expect(row).toContainText('$12.34');
  await expect(row).toContainText(paymentIntent);
  await expect(row.getByRole('link', { name: 'An item on this payment' })).toHaveAttribute('href', `/items/${answer.effect_id}`);

  const matched = page.locator('section.reconcile-category', { has: page.getByRole('heading', { name: /^Matched/ }) });
  const ours = matched.locator(`tr[data-effect="${answer.effect_id}"]`);
  await expect(ours).toContainText(requestId);
  await expect(ours).toContainText('$20.00');
  await expect(ours.getByRole('link', { name: 'Receipt' })).toHaveAttribute('href', `/api/items/${answer.effect_id}/receipt`);

  // The page and the API say the same.
  const runId = new URL(page.url()).searchParams.get('run');
  const api = await page.request.get(`/api/reconciliation/${runId}`);
  const run = (await api.json()) as { result: { by_hand: { rows: { stripe_refund: string; stripe_amount: number }[] } } };
  expect(run.result.by_hand.rows.find((r) => r.stripe_refund === handRefund)?.stripe_amount).toBe(1_234);

  await page.setViewportSize({ width: 1280, height: 900 });
  await expectAccessible(page, 'the reconciliation page');
  await shoot(page, 'reconciliation');
  await page.setViewportSize({ width: 390, height: 844 });
  await expectNoHorizontalOverflow(page, 'the reconciliation page at 390 px');

  // A reload shows the same run.
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.reload();
  await expect(page.locator(`tr[data-refund="${handRefund}"]`)).toBeVisible();
});
