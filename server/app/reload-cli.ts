import { readFileSync } from 'node:fs';
import { commandLine, messageOf } from '../cli.ts';
import { parseEnv } from '../config/env.ts';
import { isInterlockServerCommand, readPid, readReloadAnswer, type ReloadAnswer } from './reload-files.ts';

/**
 * `npm run reload`: signal the running server (the pid its data folder names) to reload its
 * config, wait for its answer, and print what changed or why the file was refused. Exit 0 when the
 * file is in force, 1 when it was refused, 2 when there is no server to ask or no answer came.
 */

/** A server that has not answered in this long is not reloading: something else is wrong. */
const ANSWER_TIMEOUT_MS = 15_000;
const POLL_MS = 50;

async function main(): Promise<number> {
  const { dataDir } = parseEnv(process.env);
  const pid = readPid(dataDir);
  if (pid === null) return fail(`no running server: ${dataDir} names none (it writes interlock.pid once it listens)`);
  // A pid file left by a server that died, whose number went to another program, must not have that program signalled.
  const command = commandOf(pid);
  if (command !== null && !isInterlockServerCommand(command)) return fail(`process ${pid} named in ${dataDir}/interlock.pid is not an Interlock server (${command})`);
  const before = readReloadAnswer(dataDir);
  try {
    process.kill(pid, 'SIGHUP');
  } catch (error) {
    return fail(`could not signal process ${pid}: ${messageOf(error)}`);
  }
  const deadline = Date.now() + ANSWER_TIMEOUT_MS;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const answer = readReloadAnswer(dataDir);
    if (answer !== null && answer.pid === pid && (before === null || before.pid !== pid || answer.n > before.n)) return print(answer);
  }
  return fail(`process ${pid} gave no answer in ${ANSWER_TIMEOUT_MS / 1000} s; see its log`);
}

/** The program a process runs, as Linux shows it; null where there is no /proc to ask. */
function commandOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return null;
  }
}

function print(answer: ReloadAnswer): number {
  switch (answer.outcome) {
    case 'refused':
      console.error(`The config was refused; the one in force stays.\n${answer.why}`);
      return 1;
    case 'unchanged':
      console.log(`The file is the one in force (sha256 ${answer.sha256}); nothing changed.`);
      return 0;
    case 'reloaded': {
      const lapsed = Object.keys(answer.lapsed).length;
      console.log(
        [
          `Config reloaded (sha256 ${answer.sha256}).`,
          ...answer.said,
          `sessions ended: ${answer.sessionsEnded}`,
          ...(lapsed > 0 ? [`approvals lapsed (approver_removed): ${lapsed}`] : []),
        ].join('\n'),
      );
      return 0;
    }
  }
}

function fail(message: string): number {
  console.error(`${commandLine()}: ${message}`);
  return 2;
}

process.exit(await main().catch((error: unknown) => fail(messageOf(error))));
