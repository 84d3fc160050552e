import { expect, test } from '@playwright/test';
import { askRefund, createPayment, decide, handRefund, ledger, personPage, shoot, uniqueId } from './journey-helpers.ts';

// Four-eyes and no self-approval, in two browsers: from $5,000.00 (e2e/interlock.e2e.yaml, route
// four-eyes) two different people of ap-leads approve; a first approval voided by a refund by hand
// says why and the count starts again; the person a refund is made for is told they cannot approve it.

test('two approvers in two browsers, a voided first approval, and no approval for one’s own benefit', async ({ browser, request }) => {
  test.setTimeout(150_000);
  const paymentIntent = await createPayment(request, 1_000_000);
  const requestId = uniqueId('four-eyes');
  const answer = await askRefund(request, { request_id: requestId, payment_intent: paymentIntent, amount: 600_000, reason: 'Order cancelled before shipping' });
  expect(answer.status).toBe('QUEUED');
  const item = `/items/${answer.effect_id}`;
  const [ana, bea] = [await personPage(browser, 'ana'), await personPage(browser, 'bea')];
  // The first approval of two sends nothing, and its confirmation says so; the second sends.
  const approve = async (page: typeof ana, first: boolean) => {
    await page.goto(item);
    await page.getByRole('button', { name: /^Approve/ }).click();
    const dialog = page.getByRole('dialog');
    if (first) await expect(dialog).toContainText('nothing is sent');
    // The second approver is told it is the last of two, and whose approval came first.
    else await expect(dialog).toContainText(/\(2 of 2\)\?[\s\S]*Bea Novak approved it first/);
    await dialog.getByRole('button', { name: first ? 'Approve (1 of 2)' : /Send/ }).click();
    if (!first) await expect(page.locator('.toast[data-status="COMMITTED"]')).toContainText('approved 2 of 2: Bea Novak first, then you');
  };
  const approvals = (page: typeof ana) => page.getByRole('region', { name: /Approvals/ });

  await ana.goto(item);
  await expect(approvals(ana)).toContainText('0 of 2');
  await approve(ana, true);
  await bea.goto(item);
  await expect(approvals(bea)).toContainText('1 of 2');
  await expect(approvals(bea)).toContainText('Approved by Ana Lopez at');
  // The queue's rows say it too: Bea reads whose approval is in, Ana that it waits for someone else.
  const row = (page: typeof ana) => page.locator(`.inbox-row[data-request-id="${requestId}"]`);
  await bea.goto('/');
  await expect(row(bea)).toContainText('Approvals 1 of 2: Ana Lopez approved; needs 1 more');
  await shoot(bea, 'inbox-four-eyes-row');
  await ana.goto('/');
  await expect(row(ana)).toContainText('Approvals 1 of 2: you approved; needs someone else');

  // A refund by hand moves the payment: the item is shown again on the new facts, and Ana's approval no longer counts.
  await handRefund(request, paymentIntent, 10_000);
  await expect(async () => {
    await bea.goto(item);
    await expect(approvals(bea)).toContainText('Voided: Ana Lopez’s approval', { timeout: 5_000 });
  }).toPass({ timeout: 45_000 });
  await expect(approvals(bea)).toContainText('because the payment changed and the item was shown again on the new facts');
  await expect(approvals(bea)).toContainText('0 of 2');
  // The history says the same of that approval: the first of two, voided, and why.
  const history = (page: typeof ana) => page.getByRole('region', { name: 'History' });
  await expect(history(bea)).toContainText('Approved, 1 of 2: voided');
  await expect(history(bea)).toContainText('No longer counts, because the payment changed');
  await shoot(bea, 'item-four-eyes-voided');

  // Bea approves first this time; Ana sees Bea's name and time, and her approval sends it under both.
  await approve(bea, true);
  await ana.goto(item);
  await expect(approvals(ana)).toContainText('Approved by Bea Novak at');
  await approve(ana, false);
  await ana.goto(item);
  await expect(ana.getByRole('heading', { level: 1 })).toContainText('Done: refund sent');
  await expect(history(ana)).toContainText('Approved, 1 of 2: the first approval');
  await expect(history(ana)).toContainText('Approved, 2 of 2: approved for sending');
  // The send and its authority are told under both approvals, the earlier first.
  await expect(history(ana)).toContainText('Prepared to send $6,000.00 under the approvals of Bea Novak and Ana Lopez');
  await expect(history(ana)).toContainText('Authority checked: the approvals of Bea Novak and Ana Lopez are live');
  // The receipt names both approvers, the earlier first.
  await expect(ana.getByRole('region', { name: 'Receipt' })).toContainText('Bea Novak (bea) and Ana Lopez (ana)');
  // And so does the ledger.
  await ana.goto('/ledger');
  await expect(ana.locator('.ledger-table tr', { hasText: requestId })).toContainText('Bea Novak (bea) and Ana Lopez (ana)');
  expect((await ledger(request, paymentIntent)).filter((r) => r.amount === 600_000)).toHaveLength(1);
  // And so does the Done page.
  await ana.goto(`/done?q=${requestId}`);
  await expect(ana.locator('.history-table tr', { hasText: requestId })).toContainText('Bea Novak (bea) and Ana Lopez (ana)');
  await shoot(ana, 'done-four-eyes');

  // A refund made on behalf of Bea: her page says why she cannot approve it, and offers no approval.
  const onBehalfId = uniqueId('on-behalf');
  const own = await askRefund(request, {
    request_id: onBehalfId,
    payment_intent: await createPayment(request, 10_000),
    amount: 8_000,
    on_behalf_of: 'bea',
  });
  await bea.goto(`/items/${own.effect_id}`);
  await expect(bea.locator('.approval-block')).toContainText('You cannot approve it. It is made for your benefit: the request names you (on behalf of bea).');
  await expect(bea.getByRole('button', { name: /^Approve/ })).toHaveCount(0);
  await shoot(bea, 'item-self-approval');
  // Everyone sees whom it is made for: Bea's own row, and Ana's row and page.
  await bea.goto('/');
  await expect(bea.locator(`.inbox-row[data-request-id="${onBehalfId}"]`)).toContainText('made for Bea Novak');
  await ana.goto('/');
  await expect(ana.locator(`.inbox-row[data-request-id="${onBehalfId}"]`)).toContainText('made for Bea Novak');
  await ana.goto(`/items/${own.effect_id}`);
  await expect(ana.locator('.request-facts div', { hasText: 'Made for' }).locator('dd')).toHaveText('Bea Novak');
  // Ana rejects it: the Closed page names the amount with its currency, and whom it was made for.
  await decide(ana, own.effect_id, 'reject');
  await ana.goto(`/closed?q=${onBehalfId}`);
  const closed = ana.locator('.history-table tr', { hasText: onBehalfId });
  await expect(closed.locator('.history-amount')).toHaveText('$80.00, request ' + onBehalfId);
  await expect(closed).toContainText('Made for Bea Novak');
  await shoot(ana, 'closed-made-for');
  // Finance reads it in the ledger too.
  const fin = await personPage(browser, 'fin');
  await fin.goto('/ledger');
  await expect(fin.locator('.ledger-table tr', { hasText: onBehalfId })).toContainText('Made for Bea Novak');
  await shoot(fin, 'ledger-made-for');
});
