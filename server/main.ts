import { ClockFileError } from './clock-file.ts';
import { LiveModeError } from './config/live-guards.ts';
import { ConfigError } from './config/load.ts';
import { EnvError, parseEnv } from './env.ts';
import { JournalDamagedError } from './integrity/damage.ts';
import { SigningKeyError } from './receipts/keys.ts';
import { startInterlock } from './runtime.ts';

// `npm start`: read the environment once, listen, recover, reload the config on SIGHUP, and shut
// down gracefully on SIGTERM or SIGINT. Until the server is up a SIGHUP has nothing to reload: it
// is ignored rather than ending the start.
let reload: (() => void) | null = null;
process.on('SIGHUP', () => reload?.());
try {
  const running = await startInterlock(parseEnv(process.env));
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    running.app.log.info(`${signal}: shutting down`);
    await running.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // SIGHUP reloads the config (server/reload.ts); the reload logs what it changed or why it was refused.
  reload = () => {
    if (stopping) return;
    running.app.log.info('SIGHUP: reloading the config');
    running.reload().catch((error: unknown) => running.app.log.error({ err: error }, 'config reload failed; the config in force stays'));
  };
} catch (error) {
  // A bad environment, config, signing key or test clock file, a damaged journal, or a live mode whose guards or key
  // probes failed, is the operator's to fix: say which, with no stack, and exit 2.
  const operators = [ConfigError, EnvError, SigningKeyError, JournalDamagedError, ClockFileError, LiveModeError];
  if (operators.some((kind) => error instanceof kind)) {
    console.error(`Interlock did not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  }
  throw error;
}
