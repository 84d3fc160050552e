import type { Entry } from '../../shared/entries.ts';
import { checkSealedChain } from './seals.ts';
import type { JournalStore, SealedEntry } from './store.ts';

/** What a guarded journal asks of whoever judges the journal (server/views/views.ts). */
export interface JournalWatch {
  /** Throws while the journal stands failed: then nothing is read from it or written to it. */
  assertAvailable(): void;
  /** Told every error a call met: a corrupt row makes the journal stand failed from then on. */
  report(error: unknown): boolean;
  /**
   * The chain of `effectId` as the watch verified it now, before the chain is read: the check
   * returned throws (a JournalCorruptError) when the chain read does not extend it, rows removed or
   * rewritten behind the journal's back. Taken first, since the watch may verify later entries of
   * the chain while the read is on its way, which a read begun earlier rightly lacks.
   */
  chainHold(effectId: string): (chain: readonly Entry[]) => void;
}

/**
 * The journal as the services use it (the gate and its recovery, the inbox, the outbox, the
 * confirmations): every call is refused at once while the journal stands failed, and a corrupt row
 * any call meets is reported before its error goes on. So nothing is sent to Stripe, and no
 * message goes out, on a journal that failed a check, whoever starts the work.
 */
export function guardJournal(journal: JournalStore, watch: JournalWatch): JournalStore {
  const guarded = async <T>(call: () => Promise<T>): Promise<T> => {
    watch.assertAvailable();
    try {
      return await call();
    } catch (error) {
      watch.report(error);
      throw error;
    }
  };
  return {
    // Every chain read for a decision is held against the one the watch verified first, so a
    // chain cut or rewritten under the running server is never taken for what it says.
    entries: (effectId) =>
      guarded(async () => {
        const hold = watch.chainHold(effectId);
        const chain = await journal.entries(effectId);
        hold(chain);
        return chain;
      }),
    append: (kind, effectId, fields, options) => guarded(() => journal.append(kind, effectId, fields, options)),
    appendIf: (kind, effectId, check, fields, claim, guard) =>
      guarded(() => {
        const hold = watch.chainHold(effectId);
        return journal.appendIf(
          kind,
          effectId,
          (chain) => {
            hold(chain);
            return check(chain);
          },
          fields,
          claim,
          guard,
        );
      }),
    reservations: (key) => guarded(() => journal.reservations(key)),
    claim: (effectId, owner, ttlMs) => guarded(() => journal.claim(effectId, owner, ttlMs)),
    release: (effectId, owner) => guarded(() => journal.release(effectId, owner)),
    inFlight: () => guarded(() => journal.inFlight()),
    scan: (afterSeq, limit) => guarded(() => journal.scan(afterSeq, limit)),
    head: () => guarded(() => journal.head()),
    newestSeq: () => guarded(() => journal.newestSeq()),
    // Held against its seals first (no state needed), then against the chain the watch verified.
    sealedChain: (effectId) =>
      guarded(async () => {
        const hold = watch.chainHold(effectId);
        const sealed = await journal.sealedChain(effectId);
        hold(checkSealedChain(effectId, sealed));
        return sealed;
      }),
    // Each chain as `sealedChain` holds it; a journal that cannot read several at once reads them one by one.
    sealedChains: (effectIds) =>
      guarded(async () => {
        const holds = effectIds.map((effectId) => watch.chainHold(effectId));
        const chains: SealedEntry[][] = [];
        if (journal.sealedChains !== undefined) chains.push(...(await journal.sealedChains(effectIds)));
        else for (const effectId of effectIds) chains.push(await journal.sealedChain(effectId));
        for (const [i, effectId] of effectIds.entries()) holds[i]!(checkSealedChain(effectId, chains[i] ?? []));
        return chains;
      }),
    sealAt: (seq) => guarded(() => journal.sealAt(seq)),
    chainEnds: (effectIds, throughSeq) => guarded(() => journal.chainEnds(effectIds, throughSeq)),
    chainIds: (after, limit) => guarded(() => journal.chainIds(after, limit)),
  };
}
