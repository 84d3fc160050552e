import { describe, expect, it } from 'vitest';
import { beneficiaryName, formatDuration, namesInWords } from '../../web/src/format.ts';

// Countdowns are calm: to the minute while a deadline is minutes or hours away, days and hours when
// it is far, and to the second only in its last two minutes, where every second counts.

const S = 1_000;
const M = 60 * S;
const H = 60 * M;

describe('countdown durations', () => {
  it.each([
    [3 * 24 * H + 5 * H + 12 * M, '3d 5h'],
    [24 * H, '1d'],
    [3 * H + 59 * M + 59 * S, '3h 59m'],
    [3 * H + 5 * M + 1 * S, '3h 05m'],
    [47 * M + 30 * S, '47m'],
    [2 * M, '2m'],
    [2 * M - 1, '1m 59s'],
    [65 * S, '1m 05s'],
    [45 * S + 900, '45s'],
    [0, '0s'],
    [-5 * S, '0s'],
  ])('countdown durations: %i ms reads %s', (ms, words) => {
    expect(formatDuration(ms)).toBe(words);
  });

  it('countdown durations: far from the deadline the words stay the same for a whole minute', () => {
    const shown = new Set(Array.from({ length: 60 }, (_, second) => formatDuration(40 * M + second * S)));
    expect([...shown]).toEqual(['40m']);
  });
});

describe('people in words', () => {
  const names: Record<string, string> = { ana: 'Ana Lopez', bea: 'Bea Novak' };
  const displayName = (login: string) => names[login] ?? login;

  it.each([
    [[], ''],
    [['Ana Lopez'], 'Ana Lopez'],
    [['Bea Novak', 'Ana Lopez'], 'Bea Novak and Ana Lopez'],
    [['Ana', 'Bea', 'Cy'], 'Ana, Bea and Cy'],
  ])('%j reads "%s"', (list, words) => {
    expect(namesInWords(list)).toBe(words);
  });

  it('names who a refund is made for as the directory names them, else as the agent wrote it', () => {
    expect(beneficiaryName('bea', displayName)).toBe('Bea Novak');
    expect(beneficiaryName('BEA', displayName)).toBe('Bea Novak');
    expect(beneficiaryName('Jo@Example.com', displayName)).toBe('Jo@Example.com');
  });
});
