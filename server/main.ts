import { ConfigError } from './config/load.ts';
import { EnvError, parseEnv } from './env.ts';
import { JournalDamagedError } from './integrity/damage.ts';
import { SigningKeyError } from './receipts/keys.ts';
import { startInterlock } from './runtime.ts';

/** `npm start`: read the environment once, listen, recover, and shut down gracefully on SIGTERM or SIGINT. */
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
} catch (error) {
  // A bad environment, config or signing key, or a damaged journal, is the operator's to fix: say which, with no stack, and exit 2.
  if (error instanceof ConfigError || error instanceof EnvError || error instanceof SigningKeyError || error instanceof JournalDamagedError) {
    console.error(`Interlock did not start: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
