import { CONFIG_CHAIN_ID, type ConfigEntry } from '../../shared/entries.ts';
import type { Status } from '../../shared/statuses.ts';
import { configEntryFields, decideConfigAtStart, describeRosterChanges, journaledConfig, peopleWhoLost, type RosterChanges, rosterOf } from '../config/config-at-start.ts';
import { ConfigError, type LoadedConfig } from '../config/load.ts';
import { type ConfigChanges, describeChanges, planReload, sessionsToEnd } from '../config/reload-plan.ts';
import type { SessionStore } from '../sessions/sessions.ts';
import type { Inbox } from '../inbox/inbox.ts';
import type { JournalStore } from '../journal/store.ts';
import type { InterlockConfig } from '../config/schema.ts';
import type { Services } from './services.ts';

/** What a reload came to: refused with why (the config in force stays), or what it changed. */
export type ReloadOutcome =
  | { outcome: 'refused'; why: string }
  | {
      outcome: 'reloaded';
      sha256: string;
      changes: ConfigChanges;
      /** What changed, in the operator's words, one line each. */
      said: string[];
      /** Sessions ended: of people removed, out of a group, or with another role or password. */
      sessionsEnded: number;
      /** Approvals whose approver left the group, and what each came to (REFUSED:lease, shown again as approver_removed). */
      lapsed: Record<string, Status>;
    }
  | { outcome: 'unchanged'; sha256: string };

/** What a start found of the config it loaded: the one the journal names, or a change it journaled. */
export type StartConfigOutcome =
  | { outcome: 'as_journaled'; sha256: string }
  | {
      outcome: 'journaled';
      sha256: string;
      /** The SHA-256 of the config compared with; null when the journal held no roster to compare with. */
      comparedWith: string | null;
      changes: RosterChanges;
      /** What changed, in the operator's words, one line each. */
      said: string[];
      sessionsEnded: number;
      lapsed: Record<string, Status>;
    };

/** Where a reload says what it did. */
export interface ReloadLog {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/**
 * Reloads the config while running (SIGHUP, `npm run reload`): the file is read and checked as at
 * start, a change to what is fixed at start is refused, and otherwise the new config is put in
 * force in one assignment and journaled (CONFIG, with the file's SHA-256 and who came and went),
 * or taken back if it cannot be. Then the sessions of people who lost authority end, with their live feeds, and
 * the approvals of people who left a group lapse. One reload at a time.
 */
export class ConfigReloader {
  #sha256: string;
  #running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly options: {
      services: Pick<Services, 'configs' | 'journal' | 'inbox' | 'views' | 'clock'>;
      sessions: SessionStore;
      /** The SHA-256 of the file the config in force was loaded from. */
      sha256: string;
      log: ReloadLog;
    },
  ) {
    this.#sha256 = options.sha256;
  }

  /** The SHA-256 of the file in force. */
  get sha256(): string {
    return this.#sha256;
  }

  /**
   * At start, before anything else is journaled: `journalConfigAtStart` for the config in force,
   * ending the sessions of people who lost authority; what it journaled is logged.
   */
  async atStart(): Promise<StartConfigOutcome> {
    const { services, sessions, log } = this.options;
    const outcome = await journalConfigAtStart({
      journal: services.journal,
      inbox: services.inbox,
      nowMs: () => services.clock.nowMs(),
      sha256: this.#sha256,
      config: services.configs.current,
      endSessions: (names) => sessions.endFor(names),
    });
    if (outcome.outcome === 'as_journaled') return outcome;
    services.views.refresh();
    log.info(
      { code: 'config_journaled_at_start', sha256: outcome.sha256, comparedWith: outcome.comparedWith, sessionsEnded: outcome.sessionsEnded, lapsed: Object.keys(outcome.lapsed).length },
      `the config in force is not the one the journal names; journaled it: ${outcome.said.join('; ')}`,
    );
    return outcome;
  }

  /** Load the file again with `load` (which throws a ConfigError for a bad one) and put it in force if it may be. */
  reload(load: () => LoadedConfig): Promise<ReloadOutcome> {
    const next = this.#running.then(() => this.#reload(load));
    this.#running = next.catch(() => {});
    return next;
  }

  async #reload(load: () => LoadedConfig): Promise<ReloadOutcome> {
    const { services, sessions, log } = this.options;
    let loaded: LoadedConfig;
    try {
      loaded = load();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return this.#refused(error.message);
    }
    if (loaded.sha256 === this.#sha256) return { outcome: 'unchanged', sha256: loaded.sha256 };
    const plan = planReload(services.configs.current, loaded.config);
    if (plan.kind === 'refused') return this.#refused(plan.why);
    const { changes } = plan;
    // In force first, then journaled: nothing decided under the old config is journaled after the
    // CONFIG entry, so from it on the journal shows no one it removed deciding. A reload that
    // cannot be journaled is taken back: the config in force is always one the journal names.
    const before = services.configs.current;
    services.configs.replace(loaded.config);
    try {
      await services.journal.append(
        'CONFIG',
        CONFIG_CHAIN_ID,
        configEntryFields({
          atMs: services.clock.nowMs(),
          sha256: loaded.sha256,
          cause: 'reload',
          comparedWith: this.#sha256 === '' ? null : this.#sha256,
          roster: rosterOf(loaded.config),
          changes,
        }),
      );
    } catch (error) {
      services.configs.replace(before);
      services.views.report(error);
      return this.#refused(`the reload could not be journaled (${error instanceof Error ? error.message : String(error)})`);
    }
    this.#sha256 = loaded.sha256;
    const sessionsEnded = await sessions.endFor(sessionsToEnd(changes));
    const lapsed = Object.fromEntries(await services.inbox.lapseRemovedApprovals());
    services.views.refresh();
    const said = describeChanges(changes);
    log.info({ code: 'config_reloaded', sha256: loaded.sha256, sessionsEnded, lapsed: Object.keys(lapsed).length }, `config reloaded: ${said.join('; ')}`);
    return { outcome: 'reloaded', sha256: loaded.sha256, changes, said, sessionsEnded, lapsed };
  }

  #refused(why: string): ReloadOutcome {
    this.options.log.error({ code: 'config_reload_refused' }, `config reload refused, the config in force stays: ${why}`);
    return { outcome: 'refused', why };
  }
}

/**
 * At start, before anything else is journaled: compare the config loaded with the one the last
 * CONFIG entry names (config/config-at-start.ts), and when they differ (the file was edited while
 * the server was down, or the journal names none yet) journal a CONFIG entry as a reload does, end
 * the sessions of people removed or out of a group, and lapse their unsent approvals
 * (approver_removed), so the journal says why and a rebuild equals the live views.
 */
export async function journalConfigAtStart(parts: {
  journal: Pick<JournalStore, 'entries' | 'append'>;
  inbox: Pick<Inbox, 'lapseRemovedApprovals'>;
  nowMs: () => number;
  /** The SHA-256 of the file the config in force was loaded from. */
  sha256: string;
  config: Pick<InterlockConfig, 'people' | 'groups'>;
  endSessions?: (names: ReadonlySet<string>) => Promise<number>;
}): Promise<StartConfigOutcome> {
  const { journal, sha256 } = parts;
  const last = (await journal.entries(CONFIG_CHAIN_ID)).filter((e): e is ConfigEntry => e.kind === 'CONFIG').at(-1);
  const roster = rosterOf(parts.config);
  const step = decideConfigAtStart(journaledConfig(last), { sha256, roster });
  if (step.step === 'none') return { outcome: 'as_journaled', sha256 };
  const { changes, comparedWith } = step;
  await journal.append('CONFIG', CONFIG_CHAIN_ID, configEntryFields({ atMs: parts.nowMs(), sha256, cause: 'start', comparedWith, roster, changes }));
  const sessionsEnded = (await parts.endSessions?.(peopleWhoLost(changes))) ?? 0;
  const lapsed = Object.fromEntries(await parts.inbox.lapseRemovedApprovals());
  const said = comparedWith === null ? ['no earlier config with its people in the journal to compare with'] : describeRosterChanges(changes);
  return { outcome: 'journaled', sha256, comparedWith, changes, said, sessionsEnded, lapsed };
}
