import { type HistorySize, KILL_BEHIND_ENTRIES } from './history-args.ts';
import { overBuiltCopies } from './history-built.ts';
import { entriesIn, extendJournal } from './history-journals.ts';
import { type Site, start, stopCleanly, timedStart } from './history-server.ts';
import type { Templates } from './journal-gen.ts';
import { type Plan, push, type Samples, say } from './stages.ts';
import { repeat } from './stats.ts';

/**
 * Per repetition: a ready server SIGKILLed, then entries appended to its journal as a server
 * would have written them, so the derived tables' last batch is KILL_BEHIND_ENTRIES behind; then
 * a start timed to ready, which catches the tables up. The journal grows by that much each time.
 */
export async function afterKills(plan: Plan, site: Site, templates: Templates, samples: Samples): Promise<void> {
  await repeat(plan.reps, async (rep) => {
    const killed = await start(site);
    killed.child.kill('SIGKILL');
    await killed.stop();
    await extendJournal(site.db, templates, entriesIn(site.db) + KILL_BEHIND_ENTRIES);
    const { seconds, server } = await timedStart(site);
    await stopCleanly(server);
    say(`history ${site.size} rep ${rep}: ready ${seconds.toFixed(2)} s after a SIGKILL with the tables ${KILL_BEHIND_ENTRIES} entries behind`);
    push(samples, { [`start_up_after_kill_s_${site.size}`]: seconds });
  });
}

/**
 * `--after-kill-only`: the after-kill repetitions alone at each size asked, over a copy of the data
 * folder kept with its tables built beside the journals (nothing else is measured, no journal is
 * read or generated); only `start_up_after_kill_s_<size>` is recorded.
 */
export async function afterKillsOnly(plan: Plan, dir: string, journalsDir: string, sizes: readonly HistorySize[]): Promise<Samples> {
  const samples: Samples = {};
  await overBuiltCopies(dir, journalsDir, sizes, (site, templates) => afterKills(plan, site, templates, samples));
  return samples;
}
