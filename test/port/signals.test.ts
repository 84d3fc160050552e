import { MemorySignals } from '../../db/memory/signals.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { cleanUpDatabases, tempDbFile } from '../support/db-journals.ts';
import { type ContractBackend, runContract } from './contract.ts';
import { type SignalsEnv, signalsCases } from './signals.contract.ts';

// The signals contract in memory and on SQLite: signals stay inside the process there, so the
// other server's signals are the same store (another process on the file finds new entries by
// polling it).

const memory: ContractBackend<SignalsEnv> = {
  name: 'memory',
  make: () => {
    const store = new MemorySignals();
    return { store, other: () => store };
  },
};

const opened: Storage[] = [];

const sqlite: ContractBackend<SignalsEnv> = {
  name: 'SQLite',
  make: async () => {
    const storage = await openStorage({ file: tempDbFile() });
    opened.push(storage);
    return { store: storage.signals, other: () => storage.signals };
  },
  cleanUp: async () => {
    for (const storage of opened.splice(0)) await storage.close();
    cleanUpDatabases();
  },
};

runContract('signals', signalsCases, [memory, sqlite]);
