import { ConfigError } from './config/load.ts';
import { startInterlock } from './runtime.ts';

/** `npm start`: listen, recover, and shut down gracefully on SIGTERM or SIGINT. */
try {
  const running = await startInterlock();
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
  if (error instanceof ConfigError) {
    console.error(`Interlock did not start: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
