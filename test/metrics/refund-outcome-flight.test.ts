import { describe, expect, it } from 'vitest';
import type { LedgerRow } from '../../shared/ledger.ts';
import type { Moved } from '../../server/ledger/view.ts';
import { RefundOutcomeCounts, watchRefundOutcomes } from '../../server/metrics/refund-outcomes.ts';
import type { Views } from '../../server/views/views.ts';

// The watch against what the ledger says each moved chain stood at before: a send under way is no
// outcome, and a request that comes back from it to the status it stood at when the send began is
// not told again (the ledger says that status; the watch keeps nothing).

/** Views that deliver the moves given, one catch-up at a time, with the ledger's answer for each chain. */
function scriptedViews() {
  let listener: ((moved: ReadonlySet<string>, inbox: { chains: Map<string, unknown> }) => void) | null = null;
  let answers = new Map<string, Moved>();
  const views = {
    current: async () => ({ ledger: { moved: (effectId: string) => answers.get(effectId) ?? { before: null, sentFrom: null, row: null } } }),
    onChainsMoved(l: typeof listener) {
      listener = l;
      return () => {
        listener = null;
      };
    },
  } as unknown as Views;
  /** Each chain as [status before, status now, the status a send under way before began from]. */
  const catchUp = (moved: Record<string, [string | null, string | null, string?]>) => {
    answers = new Map(Object.entries(moved).map(([id, [before, status, sentFrom]]) => [id, { before, sentFrom: sentFrom ?? null, row: status === null ? null : rowOf(id, status) }]));
    listener?.(new Set(answers.keys()), { chains: new Map() });
  };
  return { views, catchUp };
}

function rowOf(effectId: string, status: string): LedgerRow {
  return { effect_id: effectId, request_id: `req-${effectId}`, agent: 'support-bot', status, outcome: 'open', amount_asked_minor: 100, currency: 'usd', decided_by_login: null } as unknown as LedgerRow;
}

describe('refund outcome lines around a send', () => {
  it('tells each change once, not a return from a send to the status told before it', async () => {
    const { views, catchUp } = scriptedViews();
    const lines: string[] = [];
    const counts = new RefundOutcomeCounts();
    await watchRefundOutcomes(views, { info: (_fields, message) => lines.push(message) }, counts);
    catchUp({ a: [null, 'QUEUED'], b: ['IN_FLIGHT', 'IN_FLIGHT', 'APPROVED'], c: ['QUEUED', null] });
    catchUp({ a: ['QUEUED', 'IN_FLIGHT'] });
    // Refused at the send and back to a person: QUEUED was told, so it is not told again.
    catchUp({ a: ['IN_FLIGHT', 'QUEUED', 'QUEUED'], b: ['IN_FLIGHT', 'COMMITTED', 'APPROVED'] });
    catchUp({ a: ['QUEUED', 'IN_FLIGHT'] });
    catchUp({ a: ['IN_FLIGHT', 'COMMITTED', 'QUEUED'] });
    catchUp({ a: ['COMMITTED', 'COMMITTED'] });
    expect(lines).toEqual(['refund req-a of support-bot: QUEUED', 'refund req-b of support-bot: COMMITTED', 'refund req-a of support-bot: COMMITTED']);
    expect([counts.byLabel().get('QUEUED'), counts.byLabel().get('COMMITTED')]).toEqual([1, 2]);
  });
});
