import { describe, expect, it } from 'vitest';
import { appToWallMs, pastWallToAppMs, wallToAppMs } from '../../web/src/app-time.ts';

// Stripe's times (a refund, a charge) are wall-clock times; the item page shows every time on the
// application clock, which test mode moves by hand. A refund made after the clock was moved is on
// the moved clock, not hours before the item's own steps.

const H = 3_600_000;

describe('a Stripe time on the application clock', () => {
  const gaps = [{ wallMs: 1_000_000, gapMs: 0 }];

  it('a refund made after the last journal step, once the clock was moved, is on the moved clock', () => {
    expect(pastWallToAppMs(2_000_000, gaps, 4 * H)).toBe(2_000_000 + 4 * H);
  });

  it('a refund made before the last journal step keeps the gap that held then', () => {
    expect(pastWallToAppMs(500_000, [{ wallMs: 400_000, gapMs: 0 }, { wallMs: 900_000, gapMs: 4 * H }], 4 * H)).toBe(500_000);
  });

  it('a browser clock a little off says nothing about the two clocks', () => {
    expect(pastWallToAppMs(2_000_000, gaps, 5_000)).toBe(2_000_000);
  });
});

describe('the scoreboard says when it was read on the application clock', () => {
  it('"Updated" is the server’s now, not this browser’s clock', async () => {
    const { vi } = await import('vitest');
    const movedNowMs = Date.now() + 3 * 24 * H;
    const answers: Record<string, unknown> = {
      '/api/scoreboard': { board: {}, now_ms: movedNowMs },
      '/api/scoreboard/series': { volume: [], money: [] },
    };
    vi.stubGlobal('fetch', async (url: string) => new Response(JSON.stringify(answers[String(url).split('?')[0]!] ?? {}), { status: 200, headers: { 'content-type': 'application/json' } }));
    try {
      const { readSnapshot } = await import('../../web/src/use-scoreboard.ts');
      const snapshot = await readSnapshot({ range: 'all', group: '' }, 3 * 24 * H);
      expect(snapshot.readAtMs).toBe(movedNowMs);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('a reconciliation period picked on the application clock', () => {
  it('is asked of Stripe in wall-clock time, and its times are shown back on the application clock', () => {
    const dayOnMovedClock = Date.UTC(2026, 11, 9);
    const wall = appToWallMs(dayOnMovedClock, 3 * 24 * H);
    expect(wall).toBe(Date.UTC(2026, 11, 6));
    expect(wallToAppMs(wall, 3 * 24 * H)).toBe(dayOnMovedClock);
    expect(appToWallMs(dayOnMovedClock, 5_000)).toBe(dayOnMovedClock);
  });
});
