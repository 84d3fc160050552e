import { describe, expect, it } from 'vitest';
import { postgresOrSkip, postgresSkipNotice, SKIP_TOLD_ENV } from '../support/postgres.ts';

// What the PostgreSQL suites do on a machine without PostgreSQL: fail under CI=true, naming the
// script that installs it; skip elsewhere, one line a process saying so.

describe('postgresOrSkip', () => {
  it('runs the suites where PostgreSQL is installed, and says nothing', () => {
    const lines: string[] = [];
    expect(postgresOrSkip('suite a', { installed: true, ci: true, log: (line) => lines.push(line) })).toBe(true);
    expect(lines).toEqual([]);
  });

  it('with CI=true and no PostgreSQL, fails the suite with an error naming scripts/ensure-postgres.sh', () => {
    expect(() => postgresOrSkip('suite a', { installed: false, ci: true })).toThrow(/run scripts\/ensure-postgres\.sh; suite a cannot run with CI=true/);
  });

  it('locally with no PostgreSQL, skips the suites with one line for the whole process', () => {
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);
    const notice = { told: false };
    expect(postgresOrSkip('suite a', { installed: false, ci: false, log, notice })).toBe(false);
    expect(postgresOrSkip('suite b', { installed: false, ci: false, log, notice })).toBe(false);
    expect(lines).toEqual(['skipped the PostgreSQL suites (suite a first): PostgreSQL 15 is missing (/usr/lib/postgresql/15/bin/initdb): run scripts/ensure-postgres.sh']);
  });

  it('the run says it once: the global setup prints one line and tells the test processes it starts to stay quiet', () => {
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);
    const env: NodeJS.ProcessEnv = {};
    postgresSkipNotice({ installed: false, ci: false, log, env });
    postgresSkipNotice({ installed: false, ci: false, log, env });
    expect(lines).toEqual(['skipped the PostgreSQL suites: PostgreSQL 15 is missing (/usr/lib/postgresql/15/bin/initdb): run scripts/ensure-postgres.sh']);
    expect(env[SKIP_TOLD_ENV]).toBe('1');
    // A test process started with that environment starts with the notice told.
    expect(postgresOrSkip('suite c', { installed: false, ci: false, log, notice: { told: env[SKIP_TOLD_ENV] === '1' } })).toBe(false);
    expect(lines).toHaveLength(1);
  });

  it('the global setup says nothing where PostgreSQL is installed, nor under CI=true (each suite fails there instead)', () => {
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);
    const env: NodeJS.ProcessEnv = {};
    postgresSkipNotice({ installed: true, ci: false, log, env });
    postgresSkipNotice({ installed: false, ci: true, log, env });
    expect(lines).toEqual([]);
    expect(env[SKIP_TOLD_ENV]).toBeUndefined();
  });
});
