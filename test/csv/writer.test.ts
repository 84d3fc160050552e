import { describe, expect, it } from 'vitest';
import { csvCell, csvHeader, csvRecord, textCell } from '../../server/csv/writer.ts';
import { parseCsv } from '../support/csv.ts';

describe('the CSV writer', () => {
  it.each([
    ['say "hi"', '"say ""hi"""'],
    ['a,b', '"a,b"'],
    ['a\nb', '"a\nb"'],
    ['a,b\r\nc', '"a,b\r\nc"'],
    ['=1+1', `"'=1+1"`],
    ['+1', `"'+1"`],
    ['-2+3', `"'-2+3"`],
    ['@SUM(A1)', `"'@SUM(A1)"`],
    ['\t=1', `"'\t=1"`],
    ['', '""'],
  ])('%j is written %j', (value, cell) => {
    expect(textCell(value)).toBe(cell);
  });

  it('numbers are bare, null is empty, text is a text cell', () => {
    expect([csvCell(-5), csvCell(0), csvCell(null), csvCell('=x')]).toEqual(['-5', '0', '', `"'=x"`]);
  });

  it('records end in CRLF and read back cell for cell, quote, comma, newline and formula included', () => {
    const values = ['say "hi"', 'a,b', 'line one\nline two', '=HYPERLINK("x")', 'plain'];
    const text = csvHeader(['a', 'b', 'c', 'd', 'e']) + csvRecord(values.map(textCell)) + csvRecord(['1', '', '2', '3', '4']);
    expect(text.split('\r\n')).toHaveLength(4);
    expect(text.endsWith('\r\n')).toBe(true);
    expect(parseCsv(text)).toEqual([
      ['a', 'b', 'c', 'd', 'e'],
      ['say "hi"', 'a,b', 'line one\nline two', `'=HYPERLINK("x")`, 'plain'],
      ['1', '', '2', '3', '4'],
    ]);
  });

  it('a header name is one of our plain names, never text that would need quoting', () => {
    expect(() => csvHeader(['ok', 'no,comma'])).toThrow(/plain name/);
    expect(() => csvHeader(['=1'])).toThrow(/plain name/);
  });
});
