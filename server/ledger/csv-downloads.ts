import type { Readable } from 'node:stream';
import { limits } from '../../shared/limits.ts';
import type { Services } from '../app/services.ts';
import { displayNameOf } from '../app/services.ts';
import { ledgerCsvFromPages } from './csv-pages.ts';
import { ledgerCsvStream } from './csv-stream.ts';
import { openLedgerReader } from './export.ts';
import type { LedgerFilter } from './filter.ts';

// Finance's ledger downloads: the CSV of a filter, every row of it, streamed. On SQLite a worker
// reads the journal's file over a read-only connection of its own; on PostgreSQL, where the journal
// is no file a worker can open, the rows come from the ledger's derived table a page at a time.

/** Ledger downloads, at most limits.ledgerCsvExportsMax being made at once. */
export interface LedgerCsvDownloads {
  /**
   * The CSV of `filter`, or 'busy' while as many downloads are being made as may be. Its slot is
   * given back when the stream closes. `onCut` hears a failure part way that the views did not
   * take as damage to the journal.
   */
  open(filter: LedgerFilter, onCut: (error: unknown) => void): Promise<Readable | 'busy'>;
}

type DownloadServices = Pick<Services, 'storage' | 'views' | 'config'>;

export function ledgerCsvDownloads(services: DownloadServices): LedgerCsvDownloads {
  // Each download holds a worker or a run of page reads: a flood of asks must not start a flood of them.
  let making = 0;
  const make = services.storage.engine === 'postgresql' ? fromPages : fromWorker;
  return {
    async open(filter, onCut) {
      if (making >= limits.ledgerCsvExportsMax) return 'busy';
      // The slot is taken before the journal is opened: asks that arrive meanwhile see it taken.
      making += 1;
      let stream: Readable;
      try {
        stream = await make(services, filter, onCut);
      } catch (error) {
        making -= 1;
        throw error;
      }
      stream.once('close', () => {
        making -= 1;
      });
      return stream;
    },
  };
}

/** The CSV made by a worker reading the journal's file (SQLite). */
async function fromWorker(services: DownloadServices, filter: LedgerFilter, onCut: (error: unknown) => void): Promise<Readable> {
  const file = services.storage.location;
  // Opened here once, so a journal that cannot be read is answered as an error, not a cut download.
  await (await openLedgerReader(file)).close();
  return ledgerCsvStream({
    file,
    inboxName: services.config.inboxName,
    filter,
    displayNames: Object.fromEntries(services.config.people.map((person) => [person.name, person.displayName])),
    onError: (error) => {
      if (!services.views.report(error)) onCut(error);
    },
  });
}

/** The CSV from the ledger's derived table, the largest page at a time (PostgreSQL). */
async function fromPages(services: DownloadServices, filter: LedgerFilter): Promise<Readable> {
  const displayName = (login: string) => displayNameOf(services.config, login);
  return ledgerCsvFromPages(async (beforeSeq) => {
    const { ledger } = await services.views.current();
    const limit = limits.ledgerPageRowsMax;
    return ledger.page(filter, beforeSeq === undefined ? { limit } : { beforeSeq, limit }, displayName);
  });
}
