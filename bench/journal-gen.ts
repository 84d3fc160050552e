import fs from 'node:fs';
import { sealNext } from '../db/journal-rules.ts';
import { SqliteJournal } from '../db/journal-store.ts';
import { type OpenDatabase, openDatabase } from '../db/open.ts';
import type { Entry } from '../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject } from '../shared/json.ts';
import { effectIdFor } from '../server/journal/hash.ts';

/** The kinds of chain a real journal holds, as the bench sorts them. */
export const CHAIN_CLASSES = ['routine', 'approved', 'rejected', 'open'] as const;
export type ChainClass = (typeof CHAIN_CLASSES)[number];

/** Of every 100 generated chains, how many of each class: most refunds clear under policy. */
export const CHAIN_MIX: Record<ChainClass, number> = { routine: 85, approved: 7, rejected: 3, open: 5 };

/**
 * Items left waiting for a person, at most: past this, the oldest waiting item is decided (turned
 * down, as the rejected templates were) when a new one is added. A merchant's approvers decide
 * within the SLA, so the queue holds about a day of escalations however long the history; a
 * journal whose every twentieth request waited forever would measure open work, not history.
 */
export const OPEN_CHAINS_KEPT = 1_000;

/** Chains kept per class as templates. */
const TEMPLATES_PER_CLASS = 8;
/** Entries stored per `appendSealed` call. */
const WRITE_CHUNK = 20_000;
/** Entries read per page when harvesting. */
const SCAN_PAGE = 5_000;
/** A bound on the journal harvested from. */
const HARVEST_ENTRIES_MAX = 5_000_000;

/** Real chains to copy, by class. */
export type Templates = Record<ChainClass, Entry[][]>;

function classOf(chain: readonly Entry[], inboxName: string): ChainClass | null {
  const first = chain[0];
  if (first?.kind !== 'PROPOSED' || first.agent !== inboxName || !isJsonObject(first.request)) return null;
  const decided = chain.find((e) => e.kind === 'DECIDED');
  const committed = chain.some((e) => e.kind === 'COMMITTED');
  const escalated = chain.some((e) => e.kind === 'ESCALATED');
  if (decided?.decision === 'approve' && committed) return 'approved';
  if (decided?.decision === 'reject') return 'rejected';
  if (escalated && !decided) return 'open';
  if (!escalated && committed && chain.some((e) => e.kind === 'CONFIRMED')) return 'routine';
  return null;
}

/** Read the chains of a journal a real server wrote, and keep a few of each class, longest first. */
export async function harvestTemplates(file: string, inboxName: string): Promise<Templates> {
  const opened = openDatabase(file);
  try {
    const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
    const chains = new Map<string, Entry[]>();
    for (let after = 0, read = 0; read < HARVEST_ENTRIES_MAX; ) {
      const page = await journal.scan(after, SCAN_PAGE);
      if (page.length === 0) break;
      for (const { seq, entry } of page) {
        after = seq;
        const chain = chains.get(entry.effect_id);
        if (chain) chain.push(entry);
        else chains.set(entry.effect_id, [entry]);
      }
      read += page.length;
    }
    const templates: Templates = { routine: [], approved: [], rejected: [], open: [] };
    for (const chain of chains.values()) {
      const kind = classOf(chain, inboxName);
      if (kind) templates[kind].push(chain);
    }
    for (const kind of CHAIN_CLASSES) templates[kind] = templates[kind].sort((a, b) => b.length - a.length).slice(0, TEMPLATES_PER_CLASS);
    if (templates.routine.length === 0) throw new Error('the harvested journal holds no routine chain to copy');
    return templates;
  } finally {
    opened.close();
  }
}

/** The class of the `k`-th generated chain, following CHAIN_MIX, falling back to routine when a class has no template. */
function classFor(k: number, templates: Templates): ChainClass {
  let bucket = k % 100;
  for (const kind of CHAIN_CLASSES) {
    if (bucket < CHAIN_MIX[kind]) return templates[kind].length > 0 ? kind : 'routine';
    bucket -= CHAIN_MIX[kind];
  }
  return 'routine';
}

function remap(value: Json, strings: ReadonlyMap<string, string>): Json {
  if (typeof value === 'string') return strings.get(value) ?? value;
  if (Array.isArray(value)) return value.map((item) => remap(item, strings));
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) out[key] = remap(item, strings);
    return out;
  }
  return value;
}

/**
 * A copy of a template chain as another request: a new request id and its effect id (derived as
 * the server derives it), every entry sealed again, and every reference to an entry of the chain
 * (a decision's escalation, a person's lease) pointed at the new hash.
 */
export function copyChain(template: readonly Entry[], k: number): Entry[] {
  const first = template[0]!;
  const request = first.kind === 'PROPOSED' && first.request ? first.request : {};
  const requestId = `${String(request.id)}-g${k}`;
  const effectId = effectIdFor({ agent: String(request.agent), request_id: requestId });
  const strings = new Map<string, string>([
    [String(request.id), requestId],
    [first.effect_id, effectId],
  ]);
  const copy: Entry[] = [];
  for (const entry of template) {
    const { effect_id: _effectId, kind, ts_ms, prev: _prev, hash, ...fields } = entry;
    const sealed = sealNext(kind, effectId, remap(fields, strings) as JsonObject, copy.at(-1), ts_ms);
    strings.set(hash, sealed.hash);
    copy.push(sealed);
  }
  return copy;
}

/**
 * Append copies of the templates to the journal at `file` until it holds at least `entries`
 * entries, starting with chain number `fromChain`, deciding the oldest waiting items past
 * `openKept` (those the file held before too); returns the next chain number. Entries go in
 * through the store (`appendSealed`, which checks every hash and link) in big transactions.
 */
export async function generateJournal(file: string, templates: Templates, entries: number, fromChain = 0, openKept = OPEN_CHAINS_KEPT): Promise<number> {
  const opened = openDatabase(file);
  try {
    const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
    let stored = opened.sqlite.prepare('SELECT count(*) FROM entries').pluck().get() as number;
    let k = fromChain;
    let pending: Entry[] = [];
    const waiting = await waitingChains(opened.sqlite, journal);
    const settle = () => {
      while (waiting.length > openKept) pending.push(decisionAfter(waiting.shift()!, templates));
    };
    settle();
    while (stored + pending.length < entries) {
      const kind = classFor(k, templates);
      const pool = templates[kind];
      const chain = copyChain(pool[k % pool.length]!, k);
      pending.push(...chain);
      if (kind === 'open' && chain.at(-1)!.kind === 'ESCALATED') waiting.push(chain.at(-1)!);
      settle();
      k += 1;
      if (pending.length >= WRITE_CHUNK) {
        await journal.appendSealed(pending);
        stored += pending.length;
        pending = [];
      }
    }
    // The decisions of a journal kept from before the bound may be more than one call takes.
    for (let at = 0; at < pending.length; at += WRITE_CHUNK) await journal.appendSealed(pending.slice(at, at + WRITE_CHUNK));
    return k;
  } finally {
    opened.close();
  }
}

/** The last entries of the chains left waiting for a person (ending at their escalation), oldest first. */
async function waitingChains(sqlite: OpenDatabase['sqlite'], journal: SqliteJournal): Promise<Entry[]> {
  const ids = sqlite
    .prepare(
      `SELECT e.effect_id FROM entries e WHERE e.kind = 'ESCALATED'
       AND e.seq = (SELECT max(n.seq) FROM entries n WHERE n.effect_id = e.effect_id) ORDER BY e.seq`,
    )
    .pluck()
    .all() as string[];
  const lasts: Entry[] = [];
  for (const id of ids) lasts.push((await journal.entries(id)).at(-1)!);
  return lasts;
}

/**
 * The decision that turns down a waiting chain, as a server would write it: a rejected template's
 * decision, made as long after this chain's escalation as the template's was after its own, in
 * this escalation's group, by the first person it was routed to, linked to it.
 */
function decisionAfter(escalation: Entry, templates: Templates): Entry {
  const template = templates.rejected.find((chain) => chain.some((entry) => entry.kind === 'DECIDED'));
  const decided = template?.find((entry) => entry.kind === 'DECIDED');
  const answered = template?.findLast((entry) => entry.kind === 'ESCALATED');
  if (decided?.kind !== 'DECIDED' || answered?.kind !== 'ESCALATED') throw new Error('the templates hold no escalation decided to decide a waiting item with');
  if (escalation.kind !== 'ESCALATED') throw new Error(`a waiting chain ends at its escalation, not ${escalation.kind}`);
  const by = escalation.routed_to[0];
  if (by === undefined) throw new Error(`the escalation of ${escalation.effect_id} was routed to nobody`);
  const waitMs = Math.max(0, decided.at_ms - answered.at_ms);
  const { effect_id: _effectId, kind, ts_ms: _ts, prev: _prev, hash: _hash, ...fields } = decided;
  const made = { ...fields, at_ms: escalation.at_ms + waitMs, by, group: escalation.group, members: [...escalation.routed_to], escalation: escalation.hash };
  return sealNext(kind, escalation.effect_id, made as JsonObject, escalation, escalation.ts_ms + waitMs);
}

/** Copy a closed journal file (its WAL was checkpointed on close) to `to`. */
export function copyJournal(from: string, to: string): void {
  if (fs.existsSync(`${from}-wal`) && fs.statSync(`${from}-wal`).size > 0) throw new Error(`${from} was not closed cleanly`);
  fs.copyFileSync(from, to);
}
