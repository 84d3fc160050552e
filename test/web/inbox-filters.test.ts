import { describe, expect, it } from 'vitest';
import type { InboxItem } from '../../shared/api.ts';
import { applyFilters, defaultAmountCurrency, filterChipWords, filtersQuery, matchesFilters, parseFilters, withCurrency } from '../../web/src/inbox-filters.ts';

// The inbox's amount filter names a currency and keeps only items in it, comparing amounts in
// that currency's minor units: 190 dollars is 19000 cents, 190 yen is 190, 190 dinars 190000.

const clock = { appNowMs: 0, offsetMs: 0 };

function item(id: string, amount: number, currency: string | null): InboxItem {
  return {
    effect_id: id,
    request: { id, amount, payment_intent: `pi_${id}`, agent: 'support-bot' },
    facts: currency === null ? {} : { currency },
    reason: 'needs_judgment',
    detail: [],
    group: 'ap-leads',
    waiting_since_ms: 0,
    repairs: [],
    changes: [],
  } as unknown as InboxItem;
}

const usd190 = item('usd190', 19_000, 'usd');
const usd189 = item('usd189', 18_999, 'usd');
const jpy8000 = item('jpy8000', 8_000, 'jpy');
const jpy25000 = item('jpy25000', 25_000, 'jpy');
const kwd190 = item('kwd190', 190_000, 'kwd');
const kwd1895 = item('kwd1895', 189_500, 'kwd');
const unknown = item('unknown', 50_000, null);
const all = [usd190, usd189, jpy8000, jpy25000, kwd190, kwd1895, unknown];

const kept = (search: string) => applyFilters(all, parseFilters(search), clock).map((i) => i.effect_id);

describe('the amount filter names its currency and admits only it', () => {
  it('"from 190" in dollars admits $190.00 and no yen, dinar or unknown amount', () => {
    expect(kept('?currency=usd&min=190')).toEqual(['usd190']);
  });
  it('a link from before currencies (`?min=190`) reads its amount in dollars, not in each item’s own unit', () => {
    expect(kept('?min=190')).toEqual(['usd190']);
    expect(matchesFilters(jpy25000, parseFilters('?min=190'), clock)).toBe(false);
  });
  it('yen are compared in whole yen', () => {
    expect(kept('?currency=jpy&min=8000&max=8000')).toEqual(['jpy8000']);
    expect(kept('?currency=jpy&min=10000')).toEqual(['jpy25000']);
  });
  it('dinars are compared in thousandths', () => {
    expect(kept('?currency=kwd&min=190')).toEqual(['kwd190']);
    expect(kept('?currency=kwd&min=189.5&max=189.5')).toEqual(['kwd1895']);
  });
  it('a currency alone keeps every item in it', () => {
    expect(kept('?currency=JPY')).toEqual(['jpy8000', 'jpy25000']);
  });
  it('an amount finer than the currency counts (a fraction of a yen) is ignored, not rounded', () => {
    expect(parseFilters('?currency=jpy&min=0.5').min).toBeNull();
    expect(parseFilters('?currency=usd&min=1.005').min).toBeNull();
    expect(parseFilters('?currency=usd&min=-1').min).toBeNull();
  });
  it('the query stays readable and reads back the same', () => {
    const filters = parseFilters('?currency=kwd&min=189.5');
    expect(filtersQuery(filters)).toBe('?currency=kwd&min=189.500');
    expect(parseFilters(filtersQuery(filters))).toEqual(filters);
    expect(filtersQuery(parseFilters('?min=190'))).toBe('?currency=usd&min=190.00');
  });
});

describe('the currency an amount is read in when none is chosen', () => {
  it('is dollars while any open item is in dollars, however many are in yen', () => {
    expect(defaultAmountCurrency([usd190, jpy8000, jpy25000])).toBe('usd');
  });
  it('else the currency most items are in', () => {
    expect(defaultAmountCurrency([kwd190, jpy8000, jpy25000])).toBe('jpy');
    expect(defaultAmountCurrency([])).toBe('usd');
  });
  it('changing the currency keeps the amount as typed, or drops one the new currency cannot hold', () => {
    const dollars = parseFilters('?currency=usd&min=190&max=190.5');
    expect(withCurrency(dollars, 'jpy')).toMatchObject({ currency: 'jpy', min: 190, max: null });
    expect(withCurrency(dollars, 'kwd')).toMatchObject({ currency: 'kwd', min: 190_000, max: 190_500 });
    expect(withCurrency(dollars, null)).toMatchObject({ currency: null, min: null, max: null });
  });
  it('the chip names the currency', () => {
    expect(filterChipWords(parseFilters('?currency=usd&min=190')).map((c) => c.words)).toEqual(['Amount from $190.00']);
    expect(filterChipWords(parseFilters('?currency=kwd&min=1&max=2.5')).map((c) => c.words)).toEqual(['Amount KWD\u00a01.000 to KWD\u00a02.500']);
    expect(filterChipWords(parseFilters('?currency=jpy')).map((c) => c.words)).toEqual(['Currency JPY']);
  });
});
