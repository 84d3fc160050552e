import { sql } from 'drizzle-orm';
import { check, index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { ENTRY_KINDS } from '../shared/entries.ts';

// The kinds come from the one closed list in shared/, so a new kind cannot be written until the
// schema (and its CHECK) has been regenerated for it.
const kindList = sql.raw(ENTRY_KINDS.map((kind) => `'${kind}'`).join(', '));

/**
 * The journal: one row per sealed entry, in the order it was made durable. `body` holds the full
 * sealed entry; the other columns copy parts of it so SQL can find chains, kinds and open
 * dispatches without parsing JSON. Every read checks the copies agree with the body.
 * The append-only triggers and the fork and second-COMMITTED guards live in the custom migration
 * `0001_journal_guards.sql`, because drizzle-kit does not model triggers or expression indexes.
 */
export const entries = sqliteTable(
  'entries',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    effectId: text('effect_id').notNull(),
    kind: text('kind', { enum: ENTRY_KINDS }).notNull(),
    prev: text('prev'),
    hash: text('hash').notNull().unique(),
    /** 1 when the entry closes an open dispatch (COMMITTED, AMBIGUOUS, resolving REFUSED), else 0. */
    closes: integer('closes').notNull(),
    tsMs: integer('ts_ms').notNull(),
    body: text('body').notNull(),
    /**
     * What an open DISPATCHED reserves (a refund's payment intent), copied from its body; null on
     * every other entry. Dispatches on one payment are checked against each other through it, so
     * two refunds racing on one payment cannot both be sent on the same facts.
     */
    reserves: text('reserves'),
  },
  (t) => [
    index('entries_effect_seq').on(t.effectId, t.seq),
    index('entries_reserves_seq').on(t.reserves, t.seq),
    index('entries_kind').on(t.kind),
    check('entries_kind_known', sql`${t.kind} IN (${kindList})`),
    check('entries_closes_flag', sql`${t.closes} IN (0, 1)`),
  ],
);

/** Who currently sends or recovers an effect, until `expires_ms`. */
export const claims = sqliteTable('claims', {
  effectId: text('effect_id').primaryKey(),
  owner: text('owner').notNull(),
  expiresMs: integer('expires_ms').notNull(),
});

/** A row of `entries` as drizzle reads it. */
export type EntryRow = typeof entries.$inferSelect;

/**
 * Grants of authority by lease id (spec §5.4 DurableLeases): a cap in cents and an expiry, both
 * optional. A grant is replaced by granting again, which also clears a revocation; a revocation
 * records when it happened, once. Times are wall-clock ms.
 */
export const grants = sqliteTable('grants', {
  leaseId: text('lease_id').primaryKey(),
  /** The largest refund this lease covers, in cents; null for no cap. */
  maxCents: integer('max_cents'),
  /** The lease stops being live at this instant; null for no expiry. */
  expiresAtMs: integer('expires_at_ms'),
  grantedAtMs: integer('granted_at_ms').notNull(),
  revokedAtMs: integer('revoked_at_ms'),
});

/** A row of `grants` as drizzle reads it. */
export type GrantRow = typeof grants.$inferSelect;

/**
 * Approvers' sessions, so a restart does not log everyone out. Only the SHA-256 of the session id
 * is stored: a copy of this table cannot be replayed as a cookie.
 */
export const sessions = sqliteTable('sessions', {
  idHash: text('id_hash').primaryKey(),
  name: text('name').notNull(),
  csrfToken: text('csrf_token').notNull(),
  createdAtMs: integer('created_at_ms').notNull(),
  lastSeenAtMs: integer('last_seen_at_ms').notNull(),
});

/**
 * The Stripe budget's slots of an account's capacity, one row per slot (`family` is `*` for the
 * account's limit, else an endpoint's), each held by one process until `expires_ms` (wall-clock
 * ms); `holder` is '' for a slot given back. Processes sharing this database share the account's
 * budget through them (server/stripe/budget-slots.ts). Not the journal: no entry depends on them,
 * and a crash only lets them lapse, so they are written without waiting for the disk.
 */
export const stripeBudgetSlots = sqliteTable(
  'stripe_budget_slots',
  {
    account: text('account').notNull(),
    family: text('family').notNull(),
    slot: integer('slot').notNull(),
    holder: text('holder').notNull(),
    expiresMs: integer('expires_ms').notNull(),
  },
  (t) => [primaryKey({ columns: [t.account, t.family, t.slot] })],
);

/**
 * What each process with Stripe calls out or waiting wants of a family's slots, until `expires_ms`:
 * the fair shares are split by them. `capacity` is the family's calls a second as that process is
 * configured (0 in rows written before it was kept): processes that disagree are found by it.
 */
export const stripeBudgetWants = sqliteTable(
  'stripe_budget_wants',
  {
    account: text('account').notNull(),
    family: text('family').notNull(),
    holder: text('holder').notNull(),
    slots: integer('slots').notNull(),
    expiresMs: integer('expires_ms').notNull(),
    capacity: integer('capacity').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.account, t.family, t.holder] })],
);

/**
 * Background-work leases (db/port/leases.ts): one row per named piece of background work, held by
 * one server until `expires_ms` (wall-clock ms); `holder` is '' for a lease given back, and `epoch`
 * grows each time the lease passes to another holder. Not the journal: they only save servers from
 * doing the same work at once, so they are written without waiting for the disk.
 */
export const workLeases = sqliteTable('work_leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  epoch: integer('epoch').notNull(),
  expiresMs: integer('expires_ms').notNull(),
});

/**
 * The global chain: one row per entry of `entries`, at the same seq, with the entry's global hash
 * (server/journal/hash.ts `globalHashOf`), which commits to every entry before it in journal
 * order. A side table rather than a column because the append-only triggers forbid the UPDATE
 * that would seal rows written before it existed; written in the transaction of its entry.
 */
export const journalSeals = sqliteTable('journal_seals', {
  seq: integer('seq').primaryKey(),
  globalHash: text('global_hash').notNull(),
});

/**
 * Signed checkpoints of the global chain (server/integrity/checkpoints.ts), kept apart from the
 * entries: `size` entries whose last global hash is `head`, in `epoch`, as the signed `note`.
 */
export const journalCheckpoints = sqliteTable('journal_checkpoints', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  epoch: integer('epoch').notNull(),
  size: integer('size').notNull(),
  head: text('head').notNull(),
  note: text('note').notNull(),
  signedAtMs: integer('signed_at_ms').notNull(),
});

/** Facts about the journal as a whole, by name: its id (`journal_id`), which names it in checkpoints. */
export const journalMeta = sqliteTable('journal_meta', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
});

/**
 * Which Interlock brought the database to each schema it has had (the schema is the number of
 * migrations applied), written after the migrations: a start under an Interlock older than the
 * database names the version that wrote it (db/schema-version.ts).
 */
export const schemaVersions = sqliteTable('schema_versions', {
  schema: integer('schema').primaryKey(),
  interlock: text('interlock').notNull(),
  migratedAtMs: integer('migrated_at_ms').notNull(),
});

/**
 * The derived tables (db/port/derived.ts): each view's rows, folded from the journal and kept so a
 * server reads history from here and holds only open work in memory. `body` is the canonical JSON
 * of the row's body, stored as written: a row's digest is taken over it as it is. Lists read the
 * (view, ord, key) index, and a start's open rows the (view, open, ord, key) one.
 */
export const derivedRows = sqliteTable(
  'derived_rows',
  {
    view: text('view').notNull(),
    key: text('key').notNull(),
    ord: integer('ord').notNull(),
    open: integer('open').notNull(),
    body: text('body').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.view, t.key] }),
    index('derived_rows_order').on(t.view, t.ord, t.key),
    index('derived_rows_open').on(t.view, t.open, t.ord, t.key),
    check('derived_rows_open_flag', sql`${t.open} IN (0, 1)`),
  ],
);

/**
 * Where the derived tables stand: one row (id 1), the journal entry they include through, with the
 * global hash there and the folds' version. Absent until the tables are first built.
 */
export const derivedCursor = sqliteTable(
  'derived_cursor',
  {
    id: integer('id').primaryKey(),
    seq: integer('seq').notNull(),
    globalHash: text('global_hash'),
    size: integer('size').notNull(),
    version: text('version').notNull(),
  },
  (t) => [check('derived_cursor_one_row', sql`${t.id} = 1`)],
);

/** Each view's digest: the sum mod 2^256 of its rows' hashes (64 hex digits), and its rows. */
export const derivedDigests = sqliteTable('derived_digests', {
  view: text('view').primaryKey(),
  sum: text('sum').notNull(),
  rows: integer('rows').notNull(),
});

/**
 * The digests recorded with the cursor every DIGEST_MARK_EVERY entries: a row per view, and one of
 * view '' for the mark itself (so a mark with no view's rows is kept too).
 */
export const derivedMarks = sqliteTable(
  'derived_marks',
  {
    seq: integer('seq').notNull(),
    view: text('view').notNull(),
    sum: text('sum').notNull(),
    rows: integer('rows').notNull(),
    globalHash: text('global_hash'),
  },
  (t) => [primaryKey({ columns: [t.seq, t.view] })],
);
