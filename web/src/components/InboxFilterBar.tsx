import { type ChangeEvent, useEffect, useState } from 'react';
import type { InboxItem } from '../../../shared/api.ts';
import { whyFor } from '../../../shared/statuses.ts';
import {
  activeFilterCount,
  defaultAmountCurrency,
  type FilterChoice,
  filterChipWords,
  type FilterClock,
  filterChoices,
  type InboxFilters,
  NO_FILTERS,
  SORT_KEYS,
  SORT_LABELS,
  type SortKey,
  troubleCounts,
  withCurrency,
} from '../inbox-filters.ts';
import { decimalOf, decimalsOf, minorOf } from '../../../shared/money.ts';
import { humanize } from '../labels.ts';
import { needsMyApproval } from '../next-item.ts';
import { TROUBLE_ICONS, TROUBLE_KINDS, TROUBLE_LABELS, TROUBLE_TONES, type TroubleKind } from '../trouble.ts';

interface InboxFilterBarProps {
  items: readonly InboxItem[];
  filters: InboxFilters;
  /** How many items pass, of how many. */
  shown: number;
  /** Trouble chips depend on the time and the feed's clock offset. */
  clock: FilterClock;
  /** Approvers get "needs my approval"; finance approves nothing. */
  approver: boolean;
  onChange: (filters: InboxFilters) => void;
}

/**
 * An amount box in a currency's major unit that tells the page, in minor units of `currency`, only
 * once the person has typed an amount that currency can hold (or cleared it).
 */
function AmountField({ id, label, value, currency, onChange }: { id: string; label: string; value: number | null; currency: string; onChange: (value: number | null) => void }) {
  const shown = (minor: number | null) => (minor === null ? '' : decimalOf(minor, currency));
  const [text, setText] = useState(shown(value));
  // A new value from the address bar (back, a shared link, Clear) replaces the text; the person's own typing ("5.") stays.
  useEffect(() => setText((typed) => ((typed.trim() === '' ? null : minorOf(typed, currency)) === value ? typed : value === null ? '' : decimalOf(value, currency))), [value, currency]);
  const handleChange = (event: ChangeEvent<HTMLInputElement>) => {
    setText(event.target.value);
    const trimmed = event.target.value.trim();
    if (trimmed === '') onChange(null);
    else {
      const minor = minorOf(trimmed, currency);
      if (minor !== null) onChange(minor);
    }
  };
  const step = decimalsOf(currency) === 0 ? '1' : 'any';
  return (
    <div className="filter-field filter-amount">
      <label htmlFor={id}>{label}</label>
      <input id={id} type="number" inputMode="decimal" min={0} step={step} value={text} onChange={handleChange} />
    </div>
  );
}

/** The currency the amounts are in; an amount filter keeps only items in it. */
function CurrencyField({ filters, options, onChange }: { filters: InboxFilters; options: FilterChoice[]; onChange: (filters: InboxFilters) => void }) {
  return (
    <div className="filter-field filter-currency">
      <label htmlFor="filter-currency">Currency</label>
      <select id="filter-currency" value={filters.currency ?? ''} onChange={(event) => onChange(withCurrency(filters, event.target.value === '' ? null : event.target.value))}>
        <option value="">Any</option>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label} ({option.count})
          </option>
        ))}
      </select>
    </div>
  );
}

function SelectField({ id, label, value, options, onChange }: { id: string; label: string; value: string | null; options: FilterChoice[]; onChange: (value: string | null) => void }) {
  return (
    <div className="filter-field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value ?? ''} onChange={(event) => onChange(event.target.value === '' ? null : event.target.value)}>
        <option value="">Any</option>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label} ({option.count})
          </option>
        ))}
      </select>
    </div>
  );
}

/**
 * Why items are here, in one select: each failed rule in the words it failed with, then each other
 * reason (a stale approval, a crash). The old Reason select offered `needs_judgment` alone on a
 * day of rule failures; the failed rules are what tell those items apart.
 */
function WhyField({ filters, choices, onChange }: { filters: InboxFilters; choices: ReturnType<typeof filterChoices>; onChange: (patch: Partial<InboxFilters>) => void }) {
  const value = filters.rule !== null ? `rule:${filters.rule}` : filters.reason !== null ? `reason:${filters.reason}` : '';
  const ruled = choices.reasons.find((choice) => choice.value === 'needs_judgment');
  const others = choices.reasons.filter((choice) => choice.value !== 'needs_judgment');
  const handleChange = (event: ChangeEvent<HTMLSelectElement>) => {
    const [kind, ...rest] = event.target.value.split(':');
    const picked = rest.join(':');
    onChange(kind === 'rule' ? { rule: picked, reason: null } : kind === 'reason' ? { reason: picked, rule: null } : { rule: null, reason: null });
  };
  return (
    <div className="filter-field">
      <label htmlFor="filter-why">Why</label>
      <select id="filter-why" value={value} onChange={handleChange}>
        <option value="">Any</option>
        {(choices.rules.length > 0 || ruled) && (
          <optgroup label="Failed rule">
            {ruled && <option value="reason:needs_judgment">Any failed rule ({ruled.count})</option>}
            {choices.rules.map((choice) => (
              <option key={choice.value} value={`rule:${choice.value}`}>
                {choice.label} ({choice.count})
              </option>
            ))}
          </optgroup>
        )}
        {others.length > 0 && (
          <optgroup label="Other reason">
            {others.map((choice) => (
              <option key={choice.value} value={`reason:${choice.value}`} title={whyFor(choice.value)}>
                {humanize(choice.value)} ({choice.count})
              </option>
            ))}
          </optgroup>
        )}
      </select>
    </div>
  );
}

/** One toggle per kind of trouble, with how many items show it now; any toggled kind keeps an item. */
function TroubleToggles({ filters, counts, onChange }: { filters: InboxFilters; counts: Record<TroubleKind, number>; onChange: (trouble: TroubleKind[]) => void }) {
  const on = new Set(filters.trouble);
  const toggle = (kind: TroubleKind) => onChange(TROUBLE_KINDS.filter((k) => (k === kind ? !on.has(k) : on.has(k))));
  return (
    <fieldset className="filter-field filter-trouble">
      <legend>Trouble</legend>
      <div className="trouble-toggles">
        {TROUBLE_KINDS.map((kind) => (
          <button
            key={kind}
            type="button"
            className={`trouble-toggle chip-${TROUBLE_TONES[kind]}`}
            aria-pressed={on.has(kind)}
            data-trouble-filter={kind}
            onClick={() => toggle(kind)}
          >
            <span aria-hidden="true">{TROUBLE_ICONS[kind]} </span>
            {TROUBLE_LABELS[kind]} <span className="trouble-count">{counts[kind]}</span>
          </button>
        ))}
      </div>
    </fieldset>
  );
}

/** Only the items this person may approve and has not: not those they approved already, nor those made for them. */
function NeedsMeToggle({ on, count, onChange }: { on: boolean; count: number; onChange: (on: boolean) => void }) {
  return (
    <div className="filter-field filter-needs-me">
      <span className="filter-field-label" aria-hidden="true">
        Mine
      </span>
      <button type="button" className="trouble-toggle needs-me-toggle" aria-pressed={on} data-filter="needs-me" onClick={() => onChange(!on)}>
        Needs my approval <span className="trouble-count">{count}</span>
      </button>
    </div>
  );
}

/** The order the inbox is read in: the queue's own, or most trouble, waiting longest, largest amount first. */
export function SortField({ sort, onChange }: { sort: SortKey; onChange: (sort: SortKey) => void }) {
  return (
    <div className="sort-field">
      <label htmlFor="filter-sort">Order</label>
      <select id="filter-sort" value={sort} onChange={(event) => onChange(event.target.value as SortKey)}>
        {SORT_KEYS.map((key) => (
          <option key={key} value={key}>
            {SORT_LABELS[key]}
          </option>
        ))}
      </select>
    </div>
  );
}

/** Narrow the inbox by amount, agent, why, group and trouble; the address bar keeps the choice. */
export function InboxFilterBar({ items, filters, shown, clock, approver, onChange }: InboxFilterBarProps) {
  const choices = filterChoices(items, filters);
  const counts = troubleCounts(items, clock);
  const active = activeFilterCount(filters);
  const chips = filterChipWords(filters);
  const set = (patch: Partial<InboxFilters>) => onChange({ ...filters, ...patch });
  // An amount typed with no currency chosen is read in the currency most items are in, and says so.
  const amountCurrency = filters.currency ?? defaultAmountCurrency(items);
  // Clearing the last amount clears its currency too: with no amount there is nothing to name it for.
  const setAmount = (patch: Pick<InboxFilters, 'min'> | Pick<InboxFilters, 'max'>) => {
    const next = { ...filters, ...patch };
    onChange({ ...next, currency: next.min === null && next.max === null ? null : amountCurrency });
  };
  // On a phone the filters fold away behind one button (open while any is on); wider screens always show them.
  const [open, setOpen] = useState(active > 0);
  return (
    <>
      <button type="button" className="button small filter-toggle" aria-expanded={open} aria-controls="inbox-filters" onClick={() => setOpen(!open)}>
        Filters{active > 0 ? ` (${active} on)` : ''}
      </button>
      <form
        id="inbox-filters"
        className={`filter-bar${open ? '' : ' is-folded'}`}
        aria-label="Filter the inbox"
        onSubmit={(event) => event.preventDefault()}
      >
        <AmountField id="filter-min" label="Amount from" value={filters.min} currency={amountCurrency} onChange={(min) => setAmount({ min })} />
        <AmountField id="filter-max" label="to" value={filters.max} currency={amountCurrency} onChange={(max) => setAmount({ max })} />
        <CurrencyField filters={filters} options={choices.currencies} onChange={onChange} />
        <SelectField id="filter-agent" label="Agent" value={filters.agent} options={choices.agents} onChange={(agent) => set({ agent })} />
        <WhyField filters={filters} choices={choices} onChange={set} />
        <SelectField id="filter-group" label="Group" value={filters.group} options={choices.groups} onChange={(group) => set({ group })} />
        {approver && clock.reader && (
          <NeedsMeToggle on={filters.needsMe} count={items.filter((item) => needsMyApproval(item, clock.reader ?? '')).length} onChange={(needsMe) => set({ needsMe })} />
        )}
        <TroubleToggles filters={filters} counts={counts} onChange={(trouble) => set({ trouble })} />
        {/* With no filter on, the live indicator above already says how many are open. */}
        <p className="filter-count" aria-live="polite">
          {active > 0 ? `${shown} of ${items.length} shown` : ''}
        </p>
        {active > 0 && (
          <button type="button" className="button small ghost" onClick={() => onChange({ ...NO_FILTERS, sort: filters.sort })}>
            Clear filters
          </button>
        )}
      </form>
      {chips.length > 0 && (
        <ul className="filter-chips" aria-label="Amount filter">
          {chips.map((chip) => (
            <li key={chip.key} className="filter-chip" data-filter-chip={chip.key}>
              {chip.words}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
