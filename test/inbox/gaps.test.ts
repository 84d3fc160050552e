import { describe, expect, it } from 'vitest';
import { DECIDED_FIELDS, ESCALATED_FIELDS } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { type DecisionFields, decisionRecord, type EscalationFields, escalationRecord } from '../../server/inbox/escalation.ts';
import type { Inbox, InboxRequest } from '../../server/inbox/inbox.ts';
import { escalatedFields } from '../support/entries.ts';
import { buildInboxWorld, type InboxWorld } from '../support/inbox-world.ts';

const decision: DecisionFields = {
  at_ms: 1_500,
  by: 'ana',
  decision: 'approve',
  escalation: 'e'.repeat(64),
  group: 'ap-leads',
  members: ['ana'],
  repair: null,
  reason: null,
};

/** Drop one key from a record. */
function without(fields: JsonObject, key: string): JsonObject {
  const { [key]: _dropped, ...rest } = fields;
  return rest;
}

async function escalations(world: InboxWorld, request: InboxRequest) {
  return (await world.journal.entries(world.effectIdOf(request))).filter((e) => e.kind === 'ESCALATED');
}

/** A fresh inbox (a restart) whose capture fails for one order; failures are collected, not thrown. */
function inboxWithBrokenCapture(world: InboxWorld, brokenOrder: string): { inbox: Inbox; errors: string[] } {
  const inbox = world.newInbox();
  const errors: string[] = [];
  inbox.options.onError = (effectId) => errors.push(effectId);
  const capture = inbox.options.capture;
  inbox.options.capture = async (request) => {
    if (request.order === brokenOrder) throw new Error('orders service unreachable');
    return capture(request);
  };
  return { inbox, errors };
}

describe('escalation and decision records carry exactly their fields', () => {
  // seed: test_contract.py test_record_rejects_missing_or_unknown_fields
  const escalation = escalatedFields({ routing: { chain: ['refunds'], sla_ms: 3_600_000 } }) as EscalationFields;

  it('a complete record passes unchanged', () => {
    expect(escalationRecord(escalation)).toBe(escalation);
    expect(decisionRecord(decision)).toBe(decision);
  });

  it.each(ESCALATED_FIELDS.map((field) => [field]))('an ESCALATED without %s is refused', (field) => {
    expect(() => escalationRecord(without(escalation, field) as EscalationFields)).toThrow(/^ESCALATED fields must be exactly \[/);
  });

  it.each(DECIDED_FIELDS.map((field) => [field]))('a DECIDED without %s is refused', (field) => {
    expect(() => decisionRecord(without(decision, field) as DecisionFields)).toThrow(/^DECIDED fields must be exactly \[/);
  });

  it('an unknown extra field is refused, and the message names what came', () => {
    expect(() => escalationRecord({ ...escalation, ...{ note: 'x' } })).toThrow(/got \[.*note.*\]$/);
    expect(() => decisionRecord({ ...decision, ...{ comment: 'ok' } })).toThrow(
      'DECIDED fields must be exactly [at_ms,by,decision,escalation,group,members,reason,repair], got [at_ms,by,comment,decision,escalation,group,members,reason,repair]',
    );
    // A field swapped for another of the same count is still refused.
    expect(() => decisionRecord({ ...(without(decision, 'members') as DecisionFields), member: ['ana'] } as DecisionFields)).toThrow(/DECIDED fields/);
  });
});

describe('a capture that fails for one item does not stop the others (inbox §24 scenario 30)', () => {
  it('reconcile after recovery still escalates the other settled refusals, and the failed one later', async () => {
    // seed: test_escalation_fixes.py test_reconcile_escalates_the_rest
    const world = buildInboxWorld();
    const requests = [world.request(20), world.request(30)];
    for (const r of requests) {
      world.target.injectFault('crash_before');
      await expect(world.inbox.submit(r)).rejects.toBeInstanceOf(SimulatedCrash);
      // A hand refund during the outage: recovery must refuse rather than resend.
      world.target.refundByHand(r.order as string, 50);
    }
    const recovered = await world.newInbox().options.gate.recover();
    expect([...recovered.values()]).toEqual(['REFUSED:stale_premise_at_recovery', 'REFUSED:stale_premise_at_recovery']);
    // The first one reconciled is the one whose capture fails, so the failure comes before the others.
    const [brokenId] = [...recovered.keys()];
    const broken = requests.find((r) => world.effectIdOf(r) === brokenId)!;
    const fine = requests.find((r) => r !== broken)!;
    const { inbox, errors } = inboxWithBrokenCapture(world, broken.order as string);
    await inbox.reconcile(recovered);
    expect(errors).toEqual([brokenId]);
    expect(await escalations(world, broken)).toEqual([]);
    expect(await escalations(world, fine)).toMatchObject([{ reason: 'stale_premise_at_recovery', group: 'payments-ops' }]);
    await world.newInbox().reconcile(recovered);
    expect(await escalations(world, broken)).toMatchObject([{ reason: 'stale_premise_at_recovery', group: 'payments-ops' }]);
    expect(await escalations(world, fine)).toHaveLength(1);
    expect(world.target.refunds.filter((r) => r.effectId !== 'dashboard')).toEqual([]);
  });

  it("a restart's refresh still writes the other owed escalations, and the failed one on the next restart", async () => {
    // seed: test_escalation_fixes.py test_restart_escalates_the_rest
    const world = buildInboxWorld();
    const requests = [world.request(20), world.request(30)];
    const gate = world.inbox.options.gate;
    for (const r of requests) {
      const premises = world.target.capture(r.order as string);
      world.target.refundByHand(r.order as string, 50);
      // The gate refuses it and the process dies before the inbox escalates: the chain owes a person a look.
      const { status } = await gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: r.id, premises, effect: { order: r.order as string, amount: r.amount as number }, request: r });
      expect(status).toBe('REFUSED:stale_premise');
    }
    const [broken, fine] = requests as [InboxRequest, InboxRequest];
    const { inbox, errors } = inboxWithBrokenCapture(world, broken.order as string);
    expect(await inbox.refresh()).toEqual(new Map([[world.effectIdOf(fine), 'QUEUED']]));
    expect(errors).toEqual([world.effectIdOf(broken)]);
    expect(await escalations(world, broken)).toEqual([]);
    expect(await escalations(world, fine)).toMatchObject([{ reason: 'stale_premise', changes: [{ field: 'refunded', was: 0, now: 50 }] }]);
    expect(await world.newInbox().refresh()).toEqual(new Map([[world.effectIdOf(broken), 'QUEUED']]));
    expect(await escalations(world, broken)).toHaveLength(1);
    expect(await escalations(world, fine)).toHaveLength(1);
  });
});
