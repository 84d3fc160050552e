import { type ChangeEvent, useEffect, useState } from 'react';
import type { InboxItem } from '../../../shared/api.ts';
import { whyFor } from '../../../shared/statuses.ts';
import { activeFilterCount, filterChoices, type InboxFilters, NO_FILTERS } from '../inbox-filters.ts';
import { humanize } from '../labels.ts';

interface InboxFilterBarProps {
  items: readonly InboxItem[];
  filters: InboxFilters;
  /** How many items pass, of how many. */
  shown: number;
  onChange: (filters: InboxFilters) => void;
}

/** An amount box that tells the page only once the person stops typing a number (or clears it). */
function AmountField({ id, label, value, onChange }: { id: string; label: string; value: number | null; onChange: (value: number | null) => void }) {
  const [text, setText] = useState(value === null ? '' : String(value));
  // A new value from the address bar (back, a shared link, Clear) replaces the text; the person's own typing ("5.") stays.
  useEffect(() => setText((typed) => ((typed.trim() === '' ? null : Number(typed)) === value ? typed : value === null ? '' : String(value))), [value]);
  const handleChange = (event: ChangeEvent<HTMLInputElement>) => {
    setText(event.target.value);
    const trimmed = event.target.value.trim();
    if (trimmed === '') onChange(null);
    else if (Number.isFinite(Number(trimmed)) && Number(trimmed) >= 0) onChange(Number(trimmed));
  };
  return (
    <div className="filter-field filter-amount">
      <label htmlFor={id}>{label}</label>
      <input id={id} type="number" inputMode="decimal" min={0} step="any" value={text} onChange={handleChange} />
    </div>
  );
}

function SelectField({ id, label, value, options, onChange }: { id: string; label: string; value: string | null; options: { value: string; label: string }[]; onChange: (value: string | null) => void }) {
  return (
    <div className="filter-field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value ?? ''} onChange={(event) => onChange(event.target.value === '' ? null : event.target.value)}>
        <option value="">Any</option>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** Narrow the inbox by amount, agent, failed rule, reason, group and breach; the address bar keeps the choice. */
export function InboxFilterBar({ items, filters, shown, onChange }: InboxFilterBarProps) {
  const choices = filterChoices(items, filters);
  const active = activeFilterCount(filters);
  const set = (patch: Partial<InboxFilters>) => onChange({ ...filters, ...patch });
  const plain = (values: string[]) => values.map((value) => ({ value, label: value }));
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
        <AmountField id="filter-min" label="Amount from" value={filters.min} onChange={(min) => set({ min })} />
        <AmountField id="filter-max" label="to" value={filters.max} onChange={(max) => set({ max })} />
        <SelectField id="filter-agent" label="Agent" value={filters.agent} options={plain(choices.agents)} onChange={(agent) => set({ agent })} />
        <SelectField id="filter-rule" label="Failed rule" value={filters.rule} options={plain(choices.rules)} onChange={(rule) => set({ rule })} />
        <SelectField
          id="filter-reason"
          label="Reason"
          value={filters.reason}
          options={choices.reasons.map((value) => ({ value, label: `${humanize(value)}: ${whyFor(value)}` }))}
          onChange={(reason) => set({ reason })}
        />
        <SelectField id="filter-group" label="Group" value={filters.group} options={plain(choices.groups)} onChange={(group) => set({ group })} />
        <div className="filter-field filter-check">
          <input id="filter-breached" type="checkbox" checked={filters.breached} onChange={(event) => set({ breached: event.target.checked })} />
          <label htmlFor="filter-breached">Breached only</label>
        </div>
        <p className="filter-count" aria-live="polite">
          {active > 0 ? `${shown} of ${items.length} shown` : `${items.length} open`}
        </p>
        {active > 0 && (
          <button type="button" className="button small ghost" onClick={() => onChange(NO_FILTERS)}>
            Clear filters
          </button>
        )}
      </form>
    </>
  );
}
