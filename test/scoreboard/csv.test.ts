import { describe, expect, it } from 'vitest';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { scoreboardCsv } from '../../server/scoreboard/series.ts';
import { parseCsv } from '../support/csv.ts';

// The scoreboard CSV is written as the ledger's is (RFC 4180, CRLF, formula-safe text cells): a
// figure's name holds a group's or a reason's name from the config, which may hold anything.

describe('the scoreboard CSV', () => {
  it('every record ends in CRLF, and a name with a quote, a comma and a newline reads back whole', () => {
    const board = computeScoreboard([], 'inbox');
    board.sla_breaches_by_group = { 'ops "night", EU\nshift': 2 };
    board.escalated_by_reason = { '=cmd|calc': 1 };
    const csv = scoreboardCsv(board);
    expect(csv.endsWith('\r\n')).toBe(true);
    expect(csv.replaceAll('\r\n', '')).not.toMatch(/\r(?!\n)/);
    const records = parseCsv(csv);
    expect(records[0]).toEqual(['figure', 'value']);
    expect(records[1]).toEqual(['requests', '0']);
    expect(records).toContainEqual(['sla_breaches_by_group.ops "night", EU\nshift', '2']);
    expect(records).toContainEqual(['escalated_by_reason.=cmd|calc', '1']);
    expect(records.every((record) => record.length === 2)).toBe(true);
  });

  it('a null figure is an empty cell and numbers are bare', () => {
    const csv = scoreboardCsv(computeScoreboard([], 'inbox'));
    expect(csv).toContain('\r\n"time_to_decision.median_ms",\r\n');
    expect(csv).toContain('\r\n"requests",0\r\n');
  });
});
