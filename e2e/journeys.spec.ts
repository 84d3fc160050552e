import { expect, test } from '@playwright/test';
import {
  advanceClock,
  askRefund,
  createPayment,
  handRefund,
  awaitRepairOffered,
  inboxRow,
  ledger,
  logIn,
  PAST_SLA_MS,
  personPage,
  queuedRefund,
  uniqueId,
} from './journey-helpers.ts';

test('1. an over-limit refund an agent asks for appears in ana’s open inbox within a second, with no reload', async ({ page, request }) => {
  await logIn(page, 'ana');
  let reloads = 0;
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) reloads += 1;
  });
  const paymentIntent = await createPayment(request, 10_000);
  const requestId = uniqueId('j1');
  const answer = await askRefund(request, { request_id: requestId, payment_intent: paymentIntent, amount: 8_000, reason: 'Blender returned unopened' });
  expect(answer.status).toBe('QUEUED');

  const row = inboxRow(page, requestId);
  await expect(row).toBeVisible({ timeout: 1_000 });
  await expect(row).toContainText('$80.00');
  await expect(row).toContainText('of $100.00 paid');
  await expect(row).toContainText(paymentIntent);
  await expect(row).toContainText('support-bot');
  // How the rule failed, as the escalation worded it, never the rule's name as if it had passed.
  await expect(row.locator('[data-failed-rules]')).toHaveText('over $50.00');
  await expect(row).not.toContainText("amount within its currency's limit");
  await expect(row).toContainText('ap-leads');
  await expect(row).toContainText(/Due in 3h 5\dm/);
  expect(reloads).toBe(0);
});

test('2. ana approves from the keyboard after a confirmation naming the amount; it is sent once, moves to Done, and its receipt is valid', async ({ page, request }) => {
  const { paymentIntent, requestId, effectId } = await queuedRefund(request, 8_000, 10_000, 'j2');
  await logIn(page, 'ana');
  const link = inboxRow(page, requestId).locator('.row-link');
  await expect(link).toBeVisible();
  // j moves the focus down the list, soonest due first; this item is the newest, so it is last.
  for (let i = 0; i < 50 && !(await link.evaluate((el) => el === document.activeElement)); i++) await page.keyboard.press('j');
  await expect(link).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/items/${effectId}$`));
  await expect(page.getByRole('heading', { level: 1 })).toContainText('$80.00');

  await page.keyboard.press('a');
  const dialog = page.getByRole('dialog', { name: 'Approve and send $80.00?' });
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText(`one refund of $80.00 for payment ${paymentIntent}`);
  await expect(dialog.getByRole('button', { name: 'Send $80.00 refund' })).toBeFocused();
  await page.keyboard.press('Enter');

  // Sent: the page moves on to what is next and says what was sent; the item itself shows it done.
  await expect(page.locator('.toast[data-status="COMMITTED"]').filter({ hasText: `Sent $80.00 refund ${requestId}` })).toBeVisible();
  await expect(page).not.toHaveURL(new RegExp(`/items/${effectId}$`));
  await page.goto(`/items/${effectId}`);
  await expect(page.getByRole('heading', { level: 1 })).toContainText('Done: refund sent');
  await expect(page.getByTestId('receipt-verdict')).toHaveText(/Receipt is valid/);
  await expect(page.getByRole('link', { name: 'Download signed receipt (JSON)' })).toHaveAttribute('href', `/api/items/${effectId}/receipt`);
  await expect(page.getByRole('button', { name: /Approve/ })).toHaveCount(0);

  const refunds = await ledger(request, paymentIntent);
  expect(refunds.map((r) => r.amount)).toEqual([8_000]);

  await page.getByRole('link', { name: 'Done' }).click();
  await page.getByLabel('Search by request id or payment intent').fill(requestId);
  const doneRow = page.locator(`tr[data-request-id="${requestId}"]`);
  await expect(doneRow).toContainText('$80.00');
  await expect(doneRow).toContainText('Refund sent');
  await expect(doneRow).toContainText('Ana Lopez');
  await expect(page).toHaveURL(new RegExp(`/done\\?q=${requestId}$`));
  await page.getByRole('link', { name: /Inbox/ }).first().click();
  await expect(inboxRow(page, requestId)).toHaveCount(0);
});

test('3. a hand refund before the decision: the item comes back on the new facts with the repair first, and the repair sends exactly what is left, once', async ({ page, request }) => {
  const { paymentIntent, effectId } = await queuedRefund(request, 8_000, 10_000, 'j3');
  await handRefund(request, paymentIntent, 3_000);
  await logIn(page, 'ana');
  // Nobody has to approve and be refused first: the inbox shows the item again with the repair.
  await awaitRepairOffered(page, effectId);
  await page.goto(`/items/${effectId}`);
  const handRow = page.locator('tr[data-fact="refunded_by_others"]');
  await expect(handRow).toHaveClass(/changed/);
  await expect(handRow).toContainText('$0.00 → $30.00');
  await expect(page.getByRole('list', { name: 'What changed' })).toContainText('Already refunded by others: $0.00 → $30.00');
  await expect(page.locator('tr[data-fact="left_to_refund"]')).toContainText('$100.00 → $70.00');

  // Approving the original is offered second, saying it will be refused.
  await expect(page.locator('.decision-panel .decide-warning')).toContainText('only $70.00 is left to refund of the $80.00 asked');
  await expect(page.getByRole('button', { name: 'Approve the original $80.00' })).not.toHaveClass(/primary/);
  expect((await ledger(request, paymentIntent)).map((r) => r.amount)).toEqual([3_000]);

  const repair = page.getByRole('button', { name: 'Accept repair: Refund $70.00, what is left of $100.00' });
  await expect(repair).toHaveClass(/primary/);
  await repair.click();
  const dialog = page.getByRole('dialog', { name: 'Refund $70.00 instead of $80.00?' });
  await expect(dialog).toBeVisible();
  await dialog.getByRole('button', { name: 'Accept: refund $70.00' }).click();
  await expect(page.locator('.toast[data-status="COMMITTED"]').filter({ hasText: /Sent \$70\.00 refund.* instead of the \$\d+\.\d\d asked in j3-.+, which is closed and never sent/ })).toBeVisible();

  const amounts = (await ledger(request, paymentIntent)).map((r) => r.amount).sort((a, b) => a - b);
  expect(amounts).toEqual([3_000, 7_000]);
});

test('4. the clock crosses the SLA: the item leaves ana’s inbox for fm’s with a breach badge, and ana’s open tab says where it went, with nothing left to decide', async ({ page, browser, request }) => {
  const { paymentIntent, requestId, effectId } = await queuedRefund(request, 8_000, 10_000, 'j4');
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  await expect(page.getByRole('button', { name: 'Approve $80.00' })).toBeVisible();
  const fm = await personPage(browser, 'fm');
  await expect(inboxRow(fm, requestId)).toHaveCount(0);

  await advanceClock(page, PAST_SLA_MS);

  const fmRow = inboxRow(fm, requestId);
  await expect(fmRow).toBeVisible();
  // Moved up and not due at finance-manager yet: the chip names who missed the deadline.
  await expect(fmRow.locator('[data-trouble="breached"]')).toContainText('Missed by ap-leads');
  await expect(fmRow).toContainText('finance-manager');
  await expect(fmRow).toContainText('Level 2');
  // ana's tab says where the item went, at once, and offers nothing to decide on the escalation it left.
  await expect(page.locator('.live-change[data-news="moved"]')).toContainText('It moved up to finance-manager (Level 2) while you were looking.');
  await expect(page.getByRole('button', { name: 'Approve $80.00' })).toHaveCount(0);
  await expect(page.locator('.decision-panel')).toContainText('It is with finance-manager now (Level 2). Only its members can decide it.');
  await page.keyboard.press('a');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  expect(await ledger(request, paymentIntent)).toEqual([]);

  await page.getByRole('link', { name: /Inbox/ }).first().click();
  await expect(page.getByRole('heading', { name: 'Inbox', exact: true })).toBeVisible();
  await expect(inboxRow(page, requestId)).toHaveCount(0);
  await fm.context().close();
});

test('5. ana and bea of one group: ana decides, bea sees the item go and cannot decide it twice', async ({ page, browser, request }) => {
  const { paymentIntent, requestId, effectId } = await queuedRefund(request, 8_000, 10_000, 'j5');
  await logIn(page, 'ana');
  const beaInbox = await personPage(browser, 'bea');
  await expect(inboxRow(beaInbox, requestId)).toBeVisible();
  const beaItem = await beaInbox.context().newPage();
  await beaItem.goto(`/items/${effectId}`);
  await expect(beaItem.getByRole('button', { name: 'Approve $80.00' })).toBeVisible();

  await page.goto(`/items/${effectId}`);
  await page.getByRole('button', { name: 'Approve $80.00' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Send $80.00 refund' }).click();
  await expect(page.locator('.toast[data-status="COMMITTED"]').filter({ hasText: 'Sent $80.00 refund' })).toBeVisible();

  await expect(inboxRow(beaInbox, requestId)).toHaveCount(0);
  // bea's open item says at once who decided it, and she cannot decide it twice.
  await expect(beaItem.locator('.live-change').getByTestId('race-notice')).toHaveText(/^Ana Lopez approved it at \d\d:\d\d\.$/);
  await expect(beaItem.getByRole('button', { name: 'Approve $80.00' })).toHaveCount(0);
  await expect(beaItem.getByRole('heading', { level: 1 })).toContainText('Done: refund sent');
  await expect(beaItem.locator('.timeline')).toContainText('Approved');
  await expect(beaItem.locator('.timeline')).toContainText(/by (ana|Ana Lopez)/);

  expect((await ledger(request, paymentIntent)).map((r) => r.amount)).toEqual([8_000]);
  await beaInbox.context().close();
});

// Journey 6 (the server killed mid-flow and restarted) is e2e/restart.spec.ts: it runs its own server so it can kill it.

test('7. cy cannot see or open an ap-leads item; ana still has it', async ({ page, browser, request }) => {
  // The server's answers (cy's decision refused 404, a cross-site form post csrf_failed, nothing
  // sent) are checked without a browser in test/http/approvers.test.ts.
  const { requestId, effectId } = await queuedRefund(request, 8_000, 10_000, 'j7');
  const cy = await personPage(browser, 'cy');
  await expect(cy.getByRole('heading', { name: 'Inbox', exact: true })).toBeVisible();
  await expect(inboxRow(cy, requestId)).toHaveCount(0);
  await cy.goto(`/items/${effectId}`);
  await expect(cy.getByRole('heading', { name: 'This item is not in your groups' })).toBeVisible();

  await logIn(page, 'ana');
  await expect(inboxRow(page, requestId)).toBeVisible();
  await cy.context().close();
});
