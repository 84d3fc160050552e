import { describe, expect, it } from 'vitest';
import { postgresOrSkip } from '../support/postgres.ts';

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
});
