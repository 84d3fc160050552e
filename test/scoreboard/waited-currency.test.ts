import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { readFixture } from '../fixtures/journals/replay.ts';

// A request that waited its turn for Stripe is bound with no facts, so its first entry names no
// currency; the facts read at its turn do (the escalation shown to a person, the send's premises).
// Its money belongs to that currency, as the ledger counts it, never to "currency not recorded".

const day3 = readFixture(fileURLToPath(new URL('../fixtures/journals/day-3.jsonl', import.meta.url)));

describe('scoreboard money of requests that waited their turn', () => {
  it('day-3: every request that waited is counted in the currency its turn read, none as currency not recorded', () => {
    const waited = day3.filter((e) => e.kind === 'PROPOSED' && !(typeof e.premises === 'object' && e.premises !== null && 'currency' in e.premises));
    expect(waited.length).toBeGreaterThan(0);
    const board = computeScoreboard(day3, 'inbox');
    expect(Object.keys(board.money)).not.toContain('unknown');
    expect(Object.keys(board.money)).toContain('usd');
  });

  it('day-3: a request refused for good (Stripe knows no such payment) is no open exposure', () => {
    const missing = day3.find((e) => e.kind === 'REFUSED' && e.code === 'payment_missing');
    expect(missing).toBeDefined();
    const only = day3.filter((e) => e.effect_id === missing!.effect_id);
    const board = computeScoreboard(only, 'inbox');
    expect(Object.values(board.money).every((money) => money.exposure_minor === 0)).toBe(true);
  });
});
