import type { FieldsOf } from '../../shared/entries.ts';
import { escalated as escalatedTo, proposed as requestProposed } from '../support/outbox-world.ts';

// The outbox on an in-memory journal (test/support/outbox-world.ts), fed the entries the inbox
// and the gate write, for the adversarial outbox tests.

export { HOUR, outboxWorld, RecordingChannels } from '../support/outbox-world.ts';

/** The PROPOSED the inbox writes for an agent's request. */
export function proposed(requestId: string, amount: number, agent = 'bot'): FieldsOf<'PROPOSED'> {
  return requestProposed(requestId, amount, { agent });
}

/** An ESCALATED as the inbox's openEscalation writes it (level 0), its facts with the amount paid, with overrides. */
export function escalated(atMs: number, fields: Partial<FieldsOf<'ESCALATED'>> = {}): FieldsOf<'ESCALATED'> {
  return escalatedTo(atMs, { facts: { currency: 'usd', amount_paid: 10_000 }, ...fields });
}
