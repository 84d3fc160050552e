import type { StoredChain } from '../../db/port/journal-file.ts';
import type { JournalStore } from '../journal/store.ts';
import type { Period } from './read-journal.ts';

// The chains of a period read through the storage port, for a journal with no file to read (one
// kept in PostgreSQL): the journal is scanned by seq a page at a time, and each chain is read
// whole when its first entry in the period is met. The chains come out as a SQLite journal file
// gives them (JournalFile.chainsInPeriod), so the same journal exports the same bytes.

/** Entries read per page of the scan: one page is what memory holds of the journal, beside one chain. */
export const PERIOD_SCAN_PAGE = 512;

/**
 * Every chain with an entry stamped in `[fromMs, toMs)`, in the order of its first such entry,
 * each cut after its last entry stamped before `toMs` and at `entriesMax + 1` entries (for the
 * caller to refuse a longer one), as JournalFile.chainsInPeriod gives them. Memory holds one page
 * of the scan, one chain, and the ids of the chains met whose entries in the period reach past the
 * page being read (so a chain is given once): never the journal, nor every chain of the period.
 * Each page and each chain is a snapshot of its own; an entry the store finds corrupt stops the
 * read with its JournalCorruptError.
 */
export async function* chainsInPeriodOf(journal: JournalStore, period: Period, entriesMax: number, pageEntries = PERIOD_SCAN_PAGE): AsyncGenerator<StoredChain> {
  const inPeriod = (tsMs: number) => tsMs >= period.fromMs && tsMs < period.toMs;
  // Chains given already, by id: the seq of their last entry in the period. Once the scan reaches
  // that entry, no later one of theirs is in the period, and they are forgotten.
  const given = new Map<string, number>();
  let after = 0;
  for (;;) {
    const page = await journal.scan(after, pageEntries);
    if (page.length === 0) return;
    for (const { seq, entry } of page) {
      after = seq;
      if (!inPeriod(entry.ts_ms)) continue;
      const lastInPeriod = given.get(entry.effect_id);
      if (lastInPeriod !== undefined) {
        if (seq >= lastInPeriod) given.delete(entry.effect_id);
        continue;
      }
      const sealed = await journal.sealedChain(entry.effect_id);
      // Cut after the chain's last entry stamped before the period's end, as the file's query does.
      let cut = 0;
      let last = seq;
      for (const [i, link] of sealed.entries()) {
        if (link.entry.ts_ms < period.toMs) cut = i + 1;
        if (inPeriod(link.entry.ts_ms)) last = Math.max(last, link.seq);
      }
      if (last > seq) given.set(entry.effect_id, last);
      const kept = sealed.slice(0, Math.min(cut, entriesMax + 1));
      yield {
        effectId: entry.effect_id,
        bodies: kept.map((link) => JSON.stringify(link.entry)),
        seals: kept.map((link) => ({ seq: link.seq, global: link.global, previousGlobal: link.previousGlobal })),
      };
    }
  }
}
