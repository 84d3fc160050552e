import { CONFIG_CHAIN_ID } from '../shared/entries.ts';
import type { Status } from '../shared/statuses.ts';
import { ConfigError, type LoadedConfig } from './config/load.ts';
import { type ConfigChanges, describeChanges, planReload, sessionsToEnd } from './config/reload-plan.ts';
import type { SessionStore } from './http/sessions.ts';
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
      await services.journal.append('CONFIG', CONFIG_CHAIN_ID, {
        at_ms: services.clock.nowMs(),
        sha256: loaded.sha256,
        people_added: changes.peopleAdded,
        people_removed: changes.peopleRemoved,
        joined: changes.joined,
        left: changes.left,
      });
    } catch (error) {
      services.configs.replace(before);
      services.views.report(error);
      return this.#refused(`the reload could not be journaled (${error instanceof Error ? error.message : String(error)})`);
    }
    this.#sha256 = loaded.sha256;
    const sessionsEnded = sessions.endFor(sessionsToEnd(changes));
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
