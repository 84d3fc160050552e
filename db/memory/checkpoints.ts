import { randomBytes } from 'node:crypto';
import type { JournalStore, Sequenced } from '../../server/journal/store.ts';
import type { Checkpoints, StoredCheckpoint } from '../port/checkpoints.ts';

/** Entries read a page while a size is looked up. */
const PAGE = 1_000;

/**
 * Checkpoints in memory, for tests and the simulator; the seal reads go to the journal they sit
 * beside (its entries as sequenced, with their global hashes).
 */
export class MemoryCheckpoints implements Checkpoints {
  readonly #rows: StoredCheckpoint[] = [];
  #journalId: string | null = null;

  constructor(private readonly journal: Pick<JournalStore, 'scan'>) {}

  async latest(): Promise<StoredCheckpoint | null> {
    const newest = this.#rows.at(-1);
    return newest === undefined ? null : { ...newest };
  }

  async all(): Promise<StoredCheckpoint[]> {
    return this.#rows.map((row) => ({ ...row }));
  }

  async add(checkpoint: Omit<StoredCheckpoint, 'id'>): Promise<boolean> {
    const newest = this.#rows.at(-1);
    if (newest !== undefined && newest.epoch === checkpoint.epoch && newest.size >= checkpoint.size) return false;
    this.#rows.push({ ...checkpoint, id: (newest?.id ?? 0) + 1 });
    return true;
  }

  async journalId(): Promise<string | null> {
    return this.#journalId;
  }

  async ensureJournalId(): Promise<string> {
    this.#journalId ??= randomBytes(8).toString('hex');
    return this.#journalId;
  }

  async globalHashAtSize(size: number): Promise<string | null> {
    if (size <= 0) return null;
    return (await this.#entryAtSize(size))?.global ?? null;
  }

  async seqAtSize(size: number): Promise<number | null> {
    if (size <= 0) return 0;
    return (await this.#entryAtSize(size))?.seq ?? null;
  }

  async #entryAtSize(size: number): Promise<Sequenced | null> {
    let after = 0;
    let seen = 0;
    for (;;) {
      const page = await this.journal.scan(after, PAGE);
      if (page.length === 0) return null;
      if (seen + page.length >= size) return page[size - seen - 1] ?? null;
      seen += page.length;
      after = page.at(-1)?.seq ?? after;
    }
  }
}
