// Vitest's global setup (vitest.config.ts): runs once, in the main process, before the test
// processes start. Where the PostgreSQL suites will be skipped, one line says so for the run.
import { postgresSkipNotice } from './postgres.ts';

export default function setup(): void {
  postgresSkipNotice();
}
