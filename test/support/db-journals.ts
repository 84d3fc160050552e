import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Entry, EntryKind, FieldsOf } from '../../shared/entries.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { MemoryJournal, SqliteJournal } from '../../db/journal-store.ts';
import { type OpenDatabase, openDatabase } from '../../db/open.ts';

/** A wall clock the test moves by hand. */
export interface FakeClock {
  wallClockMs: () => number;
  advance(ms: number): void;
  readonly nowMs: number;
}

/** A clock standing at `startMs` until advanced. */
export function fakeClock(startMs = 1_700_000_000_000): FakeClock {
  let nowMs = startMs;
  return {
    wallClockMs: () => nowMs,
    advance: (ms) => {
      nowMs += ms;
    },
    get nowMs() {
      return nowMs;
    },
  };
}

/** A distinct, valid 12-hex effect id per number. */
export function effectIdOf(n: number): string {
  return n.toString(16).padStart(12, '0');
}

/** A chain check that blocks a second dispatch, as the gate's does first. */
export function blockWhileDispatched(chain: readonly Entry[]): string | null {
  return chain.some((entry) => entry.kind === 'DISPATCHED') ? 'in_flight' : null;
}

/** The kinds of an effect's chain, in order. */
export async function kindsOf(journal: JournalStore, effectId: string): Promise<EntryKind[]> {
  return (await journal.entries(effectId)).map((entry) => entry.kind);
}

const tempDirs: string[] = [];
const openDatabases: OpenDatabase[] = [];

/** A fresh temp folder, removed by `cleanUpDatabases`. */
export function makeTempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-db-'));
  tempDirs.push(dir);
  return dir;
}

/** A path for a database file that does not exist yet, in a fresh temp folder. */
export function tempDbFile(): string {
  return path.join(makeTempDir(), 'journal.sqlite');
}

/** Open a database on a temp file, closed by `cleanUpDatabases`. */
export function openTempDatabase(file = tempDbFile()): OpenDatabase & { file: string } {
  const opened = openDatabase(file);
  openDatabases.push(opened);
  return { ...opened, file };
}

/** Close every database the tests opened and remove their temp folders (call in afterEach). */
export function cleanUpDatabases(): void {
  for (const opened of openDatabases.splice(0)) {
    if (opened.sqlite.open) opened.close();
  }
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** A journal backend under test. */
export interface JournalBackend {
  name: string;
  open(clock: FakeClock): JournalStore;
}

/** Both backends, so each behaviour is specified once and held by both. */
export const journalBackends: JournalBackend[] = [
  { name: 'MemoryJournal', open: (clock) => new MemoryJournal(clock) },
  { name: 'SqliteJournal', open: (clock) => new SqliteJournal({ db: openTempDatabase().db, ...clock }) },
];

/** The least a well-formed entry of each kind carries: store tests that care about other fields override them. */
const MINIMAL_FIELDS: { [K in EntryKind]: FieldsOf<K> } = {
  PROPOSED: { agent: 'test', lease: null, premises: null, effect: {} },
  AUTHORIZED: { lease: null },
  DISPATCHED: { effect: {}, lease: null, premises: null, checks: { lease_live: true, lease: null } },
  COMMITTED: {},
  REFUSED: { code: 'test', reason: 'a test refusal' },
  AMBIGUOUS: { code: 'ambiguous' },
  ESCALATED: {
    at_ms: 0,
    reason: 'needs_judgment',
    why: 'a test',
    detail: null,
    facts: {},
    changes: [],
    repairs: [],
    route: 'default',
    group: 'g',
    routed_to: [],
    level: 0,
    due_ms: null,
    breach: false,
  },
  DECIDED: { at_ms: 0, by: 'ana', decision: 'approve', escalation: 'e'.repeat(64), group: 'g', members: ['ana'], repair: null },
  MESSAGE: { at_ms: 0, event: 'escalated', about: null, level: 0, recipient: { kind: 'person', name: 'ana' }, channel: 'email:0', content: {}, held: null },
  ATTEMPT: { n: 1, at_ms: 0, outcome: 'delivered', status: 250, detail: 'accepted', next_at_ms: null },
  GAVE_UP: { at_ms: 0, attempts: 8, reason: 'a test' },
  EPOCH: { epoch: 1, at_ms: 0, previous: null, stripe: {}, key_id: 'k', signature: 's' },
  CONFIG: { at_ms: 0, sha256: 'a'.repeat(64), people_added: [], people_removed: ['ana'], joined: [], left: [{ group: 'g', name: 'ana' }] },
  CONFIRMED: { via: 'webhook', event: null, refund: 're_test', status: 'succeeded', amount: 1, payment_intent: 'pi_test', created: null },
};

/** A well-formed entry's fields of `kind`, with `overrides` on top (which may break the shape on purpose). */
export function fields<K extends EntryKind>(kind: K, overrides: Record<string, unknown> = {}): FieldsOf<K> {
  return { ...MINIMAL_FIELDS[kind], ...overrides } as FieldsOf<K>;
}
