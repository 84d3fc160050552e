import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandLine } from '../../server/cli.ts';
import { toolCommand } from '../../server/tools.ts';

// A tool's usage names the command that started it, so an operator can copy it: the npm script
// from a clone, `node dist/server/<tool>.js` in a production install (no npm script, no tsx), and
// `npx tsx <file>` when tsx ran the source itself.

const here = process.cwd();
const argvOf = (script: string) => ['/usr/bin/node', path.join(here, script)];
const npmRun = (event: string, script: string) => ({ npm_lifecycle_event: event, npm_lifecycle_script: script });

describe('commandLine', () => {
  it('under npm run, the npm script with its arguments after --', () => {
    const argv = argvOf('server/receipts/verify-cli.ts');
    const env = npmRun('verify', 'tsx server/receipts/verify-cli.ts');
    expect(commandLine('<receipt.json>', '', argv, env)).toBe('npm run verify -- <receipt.json>');
    expect(commandLine('', '', argv, env)).toBe('npm run verify');
    // The script adds the subcommand itself.
    expect(commandLine('<dir>', 'backup', argvOf('server/backup/backup-cli.ts'), npmRun('restore', 'tsx server/backup/backup-cli.ts restore'))).toBe('npm run restore -- <dir>');
  });

  it('the compiled tool in a production install: node and its path, with the subcommand npm would have added', () => {
    expect(commandLine('<receipt.json>', '', argvOf('dist/server/verify.js'), {})).toBe('node dist/server/verify.js <receipt.json>');
    expect(commandLine('<dir> [--with-key]', 'backup', argvOf('dist/server/backup.js'), {})).toBe('node dist/server/backup.js backup <dir> [--with-key]');
    // Started from elsewhere: the path as given, so it still runs when copied.
    const elsewhere = path.join(path.dirname(here), 'elsewhere', 'dist/server/migrate.js');
    expect(commandLine('[--dry-run]', '', ['/usr/bin/node', elsewhere], {})).toBe(`node ${elsewhere} [--dry-run]`);
  });

  it('tsx on the source, even when npm started something else around it (npm test)', () => {
    const argv = argvOf('server/app/migrate-cli.ts');
    expect(commandLine('[--dry-run]', '', argv, {})).toBe('npx tsx server/app/migrate-cli.ts [--dry-run]');
    expect(commandLine('[--dry-run]', '', argv, npmRun('test', 'bash scripts/test.sh'))).toBe('npx tsx server/app/migrate-cli.ts [--dry-run]');
    // An npm script that compiles and runs the built tool names itself too.
    expect(commandLine('x', '', argvOf('dist/server/verify.js'), npmRun('verify:prod', 'node dist/server/verify.js'))).toBe('npm run verify:prod -- x');
  });
});

describe('toolCommand: a message names another tool as it runs where the message is written', () => {
  it('from source, the npm script of a clone', () => {
    expect(toolCommand('verify', '--journal data/interlock.sqlite')).toBe('npm run verify -- --journal data/interlock.sqlite');
    expect(toolCommand('hash-secret', 'token <token>')).toBe('npm run hash-secret -- token <token>');
  });

  it('compiled, the tool beside the bundle that wrote it', () => {
    const bundle = pathToFileURL(path.join(here, 'dist/server/main.js')).href;
    expect(toolCommand('hash-secret', 'token <token>', bundle)).toBe('node dist/server/hash-secret.js token <token>');
    const elsewhere = path.join(path.dirname(here), 'elsewhere', 'dist/server');
    expect(toolCommand('verify', '--journal j.sqlite', pathToFileURL(path.join(elsewhere, 'main.js')).href)).toBe(`node ${path.join(elsewhere, 'verify.js')} --journal j.sqlite`);
  });
});
