import { MemorySessions } from '../../db/memory/sessions.ts';
import type { Sessions, StoredSession } from '../../db/port/sessions.ts';
import { SqliteSessions } from '../../db/session-store.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { type SessionsEnv, sessionsCases } from './sessions.contract.ts';

const memory: ContractBackend<SessionsEnv> = {
  name: 'memory',
  make: () => {
    const store = new MemorySessions();
    return { store, other: () => store };
  },
};

/** Each connection is a database connection of its own on one file, as two processes have. */
const sqliteOn = (wrap: (store: Sessions) => Sessions = (store) => store): ContractBackend<SessionsEnv> => ({
  name: 'SQLite',
  make: () => {
    const { file } = openTempDatabase();
    const connect = () => wrap(new SqliteSessions(openTempDatabase(file).db));
    return { store: connect(), other: connect };
  },
  cleanUp: cleanUpDatabases,
});

runContract('sessions', sessionsCases, [memory, sqliteOn()]);

/** A planted bad store: it remembers the sessions it read, so one ended on another connection is still found. */
class RememberingSessions implements Sessions {
  readonly #known = new Map<string, StoredSession>();
  constructor(private readonly inner: Sessions) {}
  create = (idHash: string, session: StoredSession) => this.inner.create(idHash, session);
  seen = (idHash: string, atMs: number) => this.inner.seen(idHash, atMs);
  end = (idHash: string) => this.inner.end(idHash);
  endFor = (names: ReadonlySet<string>) => this.inner.endFor(names);
  async get(idHash: string): Promise<StoredSession | null> {
    const known = this.#known.get(idHash) ?? (await this.inner.get(idHash));
    if (known !== null) this.#known.set(idHash, known);
    return known;
  }
}

plantedFails(
  'sessions',
  sessionsCases,
  [
    'a session kept or ended on another connection is seen so by the next read',
    'session ends racing reads and sightings on two connections: once ended, ended for both',
    'through the servers’ caches: a login on A works on B, a logout on B is refused by A within a second',
    'through the servers’ caches: a reload on B ending a person’s sessions is refused by A within a second, and a feed on A is told',
  ],
  { ...sqliteOn((store) => new RememberingSessions(store)), name: 'a store that caches the sessions it read' },
);

/** A planted bad store: being seen writes the whole session back, as an upsert, so a session ended meanwhile comes back. */
class UpsertingSessions extends MemorySessions {
  readonly #copies = new Map<string, StoredSession>();
  override create(idHash: string, session: StoredSession): Promise<void> {
    this.#copies.set(idHash, session);
    return super.create(idHash, session);
  }
  override async seen(idHash: string, atMs: number): Promise<boolean> {
    const copy = this.#copies.get(idHash);
    if (copy !== undefined && (await this.get(idHash)) === null) await super.create(idHash, { ...copy, lastSeenAtMs: atMs });
    return super.seen(idHash, atMs);
  }
}

plantedFails(
  'sessions',
  sessionsCases,
  ['a session ended is gone; ending it again, or seeing it, changes nothing and never brings it back', 'session ends racing reads and sightings on two connections: once ended, ended for both'],
  {
    name: 'a store whose sighting brings an ended session back',
    make: () => {
      const store = new UpsertingSessions();
      return { store, other: () => store };
    },
  },
);
