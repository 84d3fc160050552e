import { describe, expect, it } from 'vitest';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { buildConfirmWorld, type ConfirmWorld } from '../support/confirm-stripe.ts';

// End to end: the gate sends a refund through the real Stripe target to the sandbox, and the
// sandbox posts Stripe-signed webhooks to a listening Fastify app running the plugin.

async function confirmations(world: ConfirmWorld, effectId: string) {
  return (await world.journal.entries(effectId)).filter((e) => e.kind === 'CONFIRMED');
}

function results(world: ConfirmWorld): unknown[] {
  return world.answers.map((answer) => answer.result ?? (answer.error as { code: string } | undefined)?.code);
}

describe('webhooks from the sandbox to a listening endpoint', () => {
  // seed: tests/test_confirmations.py Recording test_webhook_appends_confirmed, test_status_change_is_recorded
  it('a refund sent by the gate is CONFIRMED pending on refund.created, then succeeded on refund.updated', async () => {
    const world = await buildConfirmWorld({ webhook: true, settle: 'manual' });
    const { effectId, status } = await world.sendRefund();
    expect(status).toBe('COMMITTED');
    await world.sandbox.webhooksIdle();
    expect((await confirmations(world, effectId)).map((e) => e.status)).toEqual(['pending']);

    const [refund] = world.sandbox.refunds(world.intent.id);
    world.sandbox.settle(refund!.id);
    await world.sandbox.webhooksIdle();

    const chain = await world.journal.entries(effectId);
    const confirmed = await confirmations(world, effectId);
    expect(confirmed.map((e) => [e.via, e.status, e.refund, e.amount, e.payment_intent])).toEqual([
      ['webhook', 'pending', refund!.id, 700, world.intent.id],
      ['webhook', 'succeeded', refund!.id, 700, world.intent.id],
    ]);
    expect(chain.find((e) => e.kind === 'COMMITTED')?.result).toMatchObject({ refund: refund!.id });
    expect(confirmed.map((e) => e.event)).toEqual(world.sandbox.deliveries().map((d) => d.eventId));
    expect(world.sandbox.deliveries().map((d) => d.status)).toEqual([200, 200]);
    expect(results(world)).toEqual(['CONFIRMED', 'CONFIRMED']);
    expect(world.confirmed).toEqual([effectId, effectId]);
    const report = await verifyReceipt({ effect_id: effectId, entries: chain });
    expect(report.problems).toEqual([]);
    expect(report.confirmed_by_target).toBe(true);
  });

  it('a refund Stripe fails later is confirmed failed (refund.failed, then refund.updated repeating it)', async () => {
    const world = await buildConfirmWorld({ webhook: true, settle: 'manual' });
    const { effectId } = await world.sendRefund();
    await world.sandbox.webhooksIdle();
    world.sandbox.settle(world.sandbox.refunds(world.intent.id)[0]!.id, 'failed', 'expired_or_canceled_card');
    await world.sandbox.webhooksIdle();
    expect((await confirmations(world, effectId)).map((e) => e.status)).toEqual(['pending', 'failed']);
    expect(results(world)).toEqual(['CONFIRMED', 'CONFIRMED', 'DUPLICATE_IGNORED']);
    expect((await verifyReceipt({ effect_id: effectId, entries: await world.journal.entries(effectId) })).confirmed_by_target).toBe(false);
  });

  // seed: tests/test_confirmations.py Recording test_replayed_event_and_same_status_are_duplicates
  it('duplicate delivery mode: every event arrives twice and nothing extra is recorded', async () => {
    const world = await buildConfirmWorld({ webhook: true, settle: 'manual' });
    world.sandbox.webhookMode({ duplicate: true });
    const { effectId } = await world.sendRefund();
    await world.sandbox.webhooksIdle();
    world.sandbox.settle(world.sandbox.refunds(world.intent.id)[0]!.id);
    await world.sandbox.webhooksIdle();
    expect((await confirmations(world, effectId)).map((e) => e.status)).toEqual(['pending', 'succeeded']);
    expect(world.sandbox.deliveries().map((d) => d.status)).toEqual([200, 200, 200, 200]);
    expect(results(world)).toEqual(['CONFIRMED', 'DUPLICATE_IGNORED', 'CONFIRMED', 'DUPLICATE_IGNORED']);
  });

  // seed: tests/test_escalation_fixes.py Confirmations test_late_pending_does_not_downgrade_succeeded
  it('reverse delivery mode: succeeded arrives before pending, and the late pending is ignored as out of order', async () => {
    const world = await buildConfirmWorld({ webhook: true, settle: 'immediate' });
    world.sandbox.webhookMode({ reverse: true });
    const { effectId } = await world.sendRefund();
    await world.sandbox.webhooksIdle();
    expect(world.sandbox.deliveries().map((d) => d.type)).toEqual(['refund.updated', 'refund.created']);
    expect((await confirmations(world, effectId)).map((e) => e.status)).toEqual(['succeeded']);
    expect(results(world)).toEqual(['CONFIRMED', 'IGNORED:out_of_order']);
    expect((await verifyReceipt({ effect_id: effectId, entries: await world.journal.entries(effectId) })).confirmed_by_target).toBe(true);
  });

  it('charge.refunded and charge.dispute.created, as Stripe sends them to an endpoint enabling every event, are answered 200 and confirm nothing', async () => {
    const world = await buildConfirmWorld({ webhook: true, settle: 'manual', events: ['*'] });
    const { effectId, status } = await world.sendRefund();
    expect(status).toBe('COMMITTED');
    world.sandbox.openDispute((await world.sandbox.createPaymentIntent(3_000)).id);
    await world.sandbox.webhooksIdle();
    // Deliveries go out side by side and Stripe promises no order between events: compare them as sets.
    const byType = (a: (string | number)[], b: (string | number)[]) => String(a[0]).localeCompare(String(b[0]));
    expect(world.sandbox.deliveries().map((d) => [d.type, d.status]).sort(byType)).toEqual([
      ['charge.dispute.created', 200],
      ['charge.refunded', 200],
      ['refund.created', 200],
    ]);
    expect([...results(world)].sort()).toEqual(['CONFIRMED', 'IGNORED:type', 'IGNORED:type']);
    expect((await confirmations(world, effectId)).map((e) => e.status)).toEqual(['pending']);
  });

  // seed: tests/test_confirmations.py Signature test_bad_signature_missing_header_or_v1_rejected
  it.each([
    ['unsigned', { unsigned: true }],
    ['wrong-secret', { wrongSecret: true }],
  ])('%s deliveries are refused with 400 on every retry, and nothing is recorded', async (_name, mode) => {
    const world = await buildConfirmWorld({ webhook: true, settle: 'manual' });
    world.sandbox.webhookMode(mode);
    const { effectId, status } = await world.sendRefund();
    expect(status).toBe('COMMITTED');
    await world.sandbox.webhooksIdle();
    const deliveries = world.sandbox.deliveries();
    expect(deliveries.length).toBeGreaterThan(1);
    expect(deliveries.every((d) => d.status === 400)).toBe(true);
    expect(results(world).every((r) => r === 'signature_invalid')).toBe(true);
    expect(await confirmations(world, effectId)).toEqual([]);
    expect(world.confirmed).toEqual([]);
  });
});
