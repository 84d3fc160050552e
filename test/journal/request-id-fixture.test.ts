import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { entryShapeProblem } from '../../server/journal/shapes.ts';
import { readFixture } from '../fixtures/journals/replay.ts';

// day-4 (write-day-4.ts) was written by the first code that journals the x-request-id of an
// agent's call on its PROPOSED; the journals before it have none, and load as they did.

const FIXTURES = fileURLToPath(new URL('../fixtures/journals/', import.meta.url));

describe('x-request-id as day-4 kept it', () => {
  const entries = readFixture(`${FIXTURES}day-4.jsonl`);

  it('day-4: each call that wrote a PROPOSED kept its x-request-id there (a ULID for an unsafe one), and no other entry has one', () => {
    const kept = entries.flatMap((e) => (e.kind === 'PROPOSED' && e.http_request_id !== undefined ? [e.http_request_id] : []));
    expect(kept.slice(0, 4)).toEqual(['call-routine-1', 'call-waits-1', 'call-person-1', 'call-again-1']);
    expect(kept[4]).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    // Asking again under call-again-2 wrote nothing.
    expect(kept).not.toContain('call-again-2');
    expect(entries.filter((e) => e.kind !== 'PROPOSED' && 'http_request_id' in e)).toEqual([]);
    expect(entries.map(entryShapeProblem).filter((problem) => problem !== null)).toEqual([]);
  });

  it('day-1 to day-3 (written before it) have none, and their entries keep their shape', () => {
    for (const day of ['day-1', 'day-2', 'day-3']) {
      const older = readFixture(`${FIXTURES}${day}.jsonl`);
      expect(older.some((e) => 'http_request_id' in e)).toBe(false);
    }
  });
});
