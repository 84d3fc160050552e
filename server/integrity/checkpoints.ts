import { type Checkpoints, JournalIdUnreadableError, type StoredCheckpoint } from '../../db/port/checkpoints.ts';
import type { IntegrityConfig } from '../config/integrity.ts';
import type { SigningKey } from '../receipts/keys.ts';
import type { Views } from '../views/views.ts';
import { type Checkpoint, EMPTY_CHECKPOINT_HEAD, otherKeyAdvice, readCheckpoint, signCheckpoint } from './checkpoint.ts';
import { globalHashOf } from '../journal/hash.ts';
import { JournalCorruptError, type JournalStore } from '../journal/store.ts';
import { storedRowProblem } from './checkpoint-row.ts';
import { JournalDamagedError } from './damage.ts';
import { checkpointDamage, type Epochs, originOf, readEpochs } from './epoch.ts';
import { type Mirror, MirrorUnreachableError } from './mirrors.ts';

// Signed checkpoints of the global chain: every `checkpoint_every_entries` entries or
// `checkpoint_every_seconds` (when the journal grew), over the head the views verified, kept in
// the store apart from the entries and copied to every mirror. At start the journal is held
// against the newest one in the store and in every mirror: behind one, or with another chain at
// its size, it is refused.

/** Entries read a page while the tail is verified again. */
const TAIL_PAGE = 1_000;
/** A journal id as a store's `ensureJournalId` makes one: 8 random bytes in hex. */
const JOURNAL_ID = /^[0-9a-f]{16}$/;

export { originOf } from './epoch.ts';
export { storedRowProblem } from './checkpoint-row.ts';

/** What the log hears from the checkpoints: a structured line a metric can count by `event`. */
export interface CheckpointLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface CheckpointerParts {
  store: Checkpoints;
  views: Views;
  key: SigningKey;
  mirrors: readonly Mirror[];
  config: IntegrityConfig;
  wallMs: () => number;
  log: CheckpointLog;
  databaseFile: string;
  /**
   * Whether this server signs the background checkpoints now, among the servers on one database
   * (the work's lease, server/app/work-leases.ts): `hold` takes or renews it (each timed round),
   * `holds` answers from the last (each catch-up). Default: always. Start-up and a stop sign regardless.
   */
  lease?: { hold(): Promise<boolean>; holds(): boolean };
}

export class Checkpointer {
  readonly #parts: CheckpointerParts;
  #journalId: string | null = null;
  #epoch = 0;
  #timer: NodeJS.Timeout | null = null;
  #tailTimer: NodeJS.Timeout | null = null;
  #signing: Promise<StoredCheckpoint | null> | null = null;
  #stopCaughtUp: (() => void) | null = null;
  /** The size of the newest checkpoint this process knows of: a catch-up short of the next one asks the store nothing. */
  #knownSize = 0;

  constructor(parts: CheckpointerParts) {
    this.#parts = parts;
  }

  /** This journal's origin in its current epoch. */
  get origin(): string {
    if (this.#journalId === null) throw new Error('the checkpointer was not checked at start');
    return originOf(this.#journalId, this.#epoch);
  }

  /**
   * At start, after the replay verified every entry: the journal must hold everything the newest
   * checkpoint in the store and in every reachable mirror covers, with the same chain. An
   * unreachable mirror is a warning; no mirror at all is a warning too.
   */
  async checkAtStart(journal: { size: number; head: string | null }): Promise<void> {
    const { store, log, mirrors, databaseFile, key, views } = this.#parts;
    const stored = await store.latest();
    const journalId = (await storedJournalId(store, stored !== null, databaseFile)) ?? (await store.ensureJournalId());
    this.#journalId = journalId;
    const epochs = await readEpochs(views.journal, key, journalId, databaseFile);
    this.#epoch = epochs.current;
    if (stored !== null) {
      const problem = storedRowProblem(stored, key);
      if (problem !== null) throw new JournalDamagedError('checkpoint_invalid', `the newest checkpoint in the store ${problem}`, { databaseFile });
      await this.#hold(journal.size, epochs, stored.note, 'the store');
    }
    for (const mirror of mirrors) {
      let note: string | null;
      try {
        note = await mirror.latest();
      } catch (error) {
        if (!(error instanceof MirrorUnreachableError)) throw error;
        log.warn({ event: 'checkpoint_mirror_unreachable', mirror: mirror.name }, `checkpoint mirror ${mirror.name} could not be read at start, so the journal was not held against it: ${error.message}`);
        continue;
      }
      if (note !== null) await this.#hold(journal.size, epochs, note, `the mirror ${mirror.name}`);
    }
    if (mirrors.length === 0) {
      log.warn({ event: 'checkpoint_no_mirror' }, 'no checkpoint mirror is configured (integrity.mirrors): someone who can write the data folder could rewrite the journal with its checkpoints unnoticed');
    }
  }

  /** Refuse the journal unless it holds everything `note` covers, with the chain it signed, as far as its epochs say. */
  async #hold(size: number, epochs: Epochs, note: string, source: string): Promise<void> {
    const { key, store, databaseFile } = this.#parts;
    const read = readCheckpoint(note, { publicKeyPem: key.publicKeyPem, keyId: key.keyId });
    if (!read.ok) throw new JournalDamagedError('checkpoint_invalid', `the newest checkpoint in ${source} does not verify with the receipt key (${read.code}: ${read.message})${otherKeyAdvice(read)}`, { databaseFile });
    const head = this.#parts.views.head;
    const dense = head !== null && head.seq === head.size;
    const held = {
      journalId: this.#journalId ?? '',
      size,
      epochs,
      globalHashAtSize: (n: number) => store.globalHashAtSize(n, dense),
      seqAtSize: (n: number) => store.seqAtSize(n),
    };
    const damage = await checkpointDamage(read.checkpoint, held, source, databaseFile);
    if (damage !== null) throw damage;
  }

  /**
   * Sign a checkpoint of what the views verified, when the journal grew since the newest one (by
   * `checkpoint_every_entries`, or at all with `whenGrown`); store it and copy it to every mirror.
   */
  sign(whenGrown = false): Promise<StoredCheckpoint | null> {
    if (this.#signing === null) this.#signing = this.#sign(whenGrown).finally(() => (this.#signing = null));
    return this.#signing;
  }

  async #sign(whenGrown: boolean): Promise<StoredCheckpoint | null> {
    const { store, views, key, config, wallMs } = this.#parts;
    if (views.unavailable !== null) return null;
    // A journal of no entries yet has the empty head, so its first start signs a checkpoint too.
    const head = views.head ?? { size: 0, globalHash: EMPTY_CHECKPOINT_HEAD };
    if (!whenGrown && head.size - this.#knownSize < config.checkpointEveryEntries) return null;
    // A build started without the start-up check (a test's) names its journal here.
    this.#journalId ??= await store.ensureJournalId();
    const newest = await this.#newest();
    if (newest === undefined) return null;
    this.#knownSize = Math.max(this.#knownSize, newest?.size ?? 0);
    const grown = head.size - (newest?.size ?? 0);
    // The first checkpoint is signed whatever the journal's size; each later one once it grew.
    if ((grown <= 0 && newest !== null) || (!whenGrown && grown < config.checkpointEveryEntries)) return null;
    const checkpoint: Checkpoint = { origin: this.origin, size: head.size, head: head.globalHash };
    const row = { epoch: this.#epoch, size: checkpoint.size, head: checkpoint.head, note: signCheckpoint(checkpoint, key), signedAtMs: wallMs() };
    if (!(await store.add(row))) return null;
    this.#knownSize = row.size;
    await this.#copy(row.note);
    return await store.latest();
  }

  async #copy(note: string): Promise<void> {
    await Promise.all(
      this.#parts.mirrors.map(async (mirror) => {
        try {
          await mirror.put(note);
        } catch (error) {
          if (!(error instanceof MirrorUnreachableError)) throw error;
          this.#parts.log.warn({ event: 'checkpoint_mirror_unreachable', mirror: mirror.name }, `checkpoint mirror ${mirror.name} did not take the checkpoint; the next one is tried: ${error.message}`);
        }
      }),
    );
  }

  /**
   * Read the entries since the newest checkpoint again and recompute the global chain from its
   * head: a row changed since the views applied it (or one the views never saw in its place) makes
   * the views unavailable, as any failed check does. True when the tail holds.
   */
  async verifyTail(journal: JournalStore): Promise<boolean> {
    const { store, views } = this.#parts;
    const head = views.head;
    if (head === null || views.unavailable !== null) return views.unavailable === null;
    const newest = await this.#newest();
    if (newest === undefined) return false;
    const fromSize = newest === null || newest.epoch !== this.#epoch ? 0 : newest.size;
    let previous = fromSize === 0 ? null : newest?.head ?? null;
    let after = (await store.seqAtSize(fromSize)) ?? 0;
    try {
      while (after < head.seq) {
        const page = await journal.scan(after, TAIL_PAGE);
        if (page.length === 0) break;
        for (const { seq, entry, global } of page) {
          if (seq > head.seq) break;
          const expected = globalHashOf(previous, seq, entry.hash);
          if (global !== expected) throw new JournalCorruptError(`journal entry seq ${seq} breaks the global chain since the last checkpoint`, { seq, effectId: entry.effect_id });
          previous = global;
          after = seq;
        }
      }
      if (previous !== head.globalHash) throw new JournalCorruptError(`journal entry seq ${head.seq} is no longer the one the views verified`, { seq: head.seq, effectId: 'unknown' });
      return true;
    } catch (error) {
      if (views.report(error)) return false;
      throw error;
    }
  }

  /**
   * What is wrong with the newest checkpoint now (the background pass asks, after it verified the
   * seals against the entries): its note does not verify, its columns are not what it signed, or
   * the seals at its size are not the head it signed. Null when it holds, when there is none, or
   * when it belongs to an earlier epoch (start-up held the journal against those).
   */
  async checkpointProblem(): Promise<{ seq: number; problem: string } | null> {
    const { store, key, views } = this.#parts;
    const newest = await store.latest();
    if (newest === null) return null;
    const problem = storedRowProblem(newest, key);
    if (problem !== null) return { seq: 0, problem };
    if (newest.epoch !== this.#epoch || newest.size === 0) return null;
    const head = views.head;
    const at = await store.globalHashAtSize(newest.size, head !== null && head.seq === head.size);
    if (at === null) return { seq: 0, problem: `covers ${newest.size} entries, but the journal holds fewer: entries were removed` };
    if (at !== newest.head) return { seq: (await store.seqAtSize(newest.size)) ?? 0, problem: `signed the head ${newest.head} at size ${newest.size}, but the seals there give ${at}: the journal was rewritten` };
    return null;
  }

  /**
   * The store's newest checkpoint, once its size, head and epoch are the ones its note signed:
   * those columns decide what is signed next and where the tail's check starts, and a row
   * inserted with a size beyond its note would silence both. A row that disagrees is damage, and
   * makes the views unavailable (undefined).
   */
  async #newest(): Promise<StoredCheckpoint | null | undefined> {
    const { store, key, views } = this.#parts;
    const newest = await store.latest();
    if (newest === null) return null;
    const problem = storedRowProblem(newest, key);
    if (problem === null) return newest;
    views.report(new JournalCorruptError(`the newest checkpoint in the store ${problem}`, { seq: views.head?.seq ?? 0, effectId: 'unknown' }));
    return undefined;
  }

  /**
   * At a graceful stop, once nothing writes any more: sign everything the views verified. The
   * entries since the last checkpoint are covered by no signature, so cut off the end while the
   * server is stopped they would leave a journal that agrees with every mirror (and a refund
   * among them would look new when asked again). Never throws: a stop goes on regardless.
   */
  async signAtStop(): Promise<void> {
    const { views } = this.#parts;
    try {
      await views.current();
      await this.sign(true);
    } catch (error) {
      if (!views.report(error)) this.#failed(error);
    }
  }

  /** Sign as the journal grows: after each catch-up past the entry count, and on the timer when it grew at all. */
  start(): void {
    const { config, views } = this.#parts;
    this.stop();
    const lease = this.#parts.lease;
    this.#timer = setInterval(() => void this.#signHeld(true, lease === undefined ? true : lease.hold()), config.checkpointEveryMs);
    this.#timer.unref();
    this.#stopCaughtUp = views.onCaughtUpUntil(() => void this.#signHeld(false, lease === undefined || lease.holds()));
    this.#tailTimer = setInterval(() => void this.verifyTail(views.journal).catch((error: unknown) => this.#failed(error)), config.tailVerifyMs);
    this.#tailTimer.unref();
  }

  /** A background signing, when `held` says this server signs them now; never throws. */
  async #signHeld(whenGrown: boolean, held: boolean | Promise<boolean>): Promise<void> {
    try {
      if (await held) await this.sign(whenGrown);
    } catch (error) {
      this.#failed(error);
    }
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    if (this.#tailTimer !== null) clearInterval(this.#tailTimer);
    this.#timer = null;
    this.#tailTimer = null;
    this.#stopCaughtUp?.();
    this.#stopCaughtUp = null;
  }

  #failed(error: unknown): void {
    this.#parts.log.warn({ event: 'checkpoint_failed', err: error }, 'a checkpoint could not be signed; the next one tries again');
  }
}

/**
 * The journal's id as the store keeps it, null when it has none yet. It names the journal in every
 * checkpoint, and no trigger guards its table: a table removed, an id removed while checkpoints
 * remain, or an id that is not one is damage, told as start-up tells damage.
 */
export async function storedJournalId(store: Checkpoints, hasCheckpoints: boolean, databaseFile: string): Promise<string | null> {
  let id: string | null;
  try {
    id = await store.journalId();
  } catch (error) {
    if (!(error instanceof JournalIdUnreadableError)) throw error;
    throw new JournalDamagedError('journal_corrupt', `the journal id cannot be read (${error.message}): its table was removed or changed`, { databaseFile });
  }
  if (id === null && hasCheckpoints) throw new JournalDamagedError('journal_corrupt', 'the journal has checkpoints but no journal id: its id was removed', { databaseFile });
  if (id !== null && !JOURNAL_ID.test(id)) throw new JournalDamagedError('journal_corrupt', 'the journal id is not one (16 lowercase hex characters): it was changed', { databaseFile });
  return id;
}
