import { SchemaAheadError } from '../db/schema-version.ts';
import { isStorageStartRefusal } from '../db/server-storage.ts';
import { ClockFileError } from './app/clock-file.ts';
import { LiveModeError } from './config/live-guards.ts';
import { ConfigError } from './config/load.ts';
import { EnvError, parseEnv } from './config/env.ts';
import { JournalDamagedError } from './integrity/damage.ts';
import { SigningKeyError } from './receipts/keys.ts';
import { startInterlock } from './app/runtime.ts';
import { answerSignals } from './app/signals.ts';

// `npm start`: read the environment once, listen, recover, reload the config on SIGHUP (one sent
// during the start is acted on once the server is up), and shut down gracefully on SIGTERM or SIGINT.
try {
  await answerSignals(startInterlock(parseEnv(process.env)));
} catch (error) {
  // A bad environment, config, signing key or test clock file, a damaged journal, a database a newer Interlock
  // migrated (or one not reached, not migrated, not in UTF8), or a live mode whose guards or key probes failed,
  // is the operator's to fix: say which, with no stack, and exit 2.
  const operators = [ConfigError, EnvError, SigningKeyError, JournalDamagedError, ClockFileError, LiveModeError, SchemaAheadError];
  if (operators.some((kind) => error instanceof kind) || isStorageStartRefusal(error)) {
    console.error(`Interlock did not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  }
  throw error;
}
