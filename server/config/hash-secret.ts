/**
 * Print the hash an operator puts in the config file:
 *   npm run hash-secret -- password <password>   → scrypt$N$r$p$salt$hash for people[].password
 *   npm run hash-secret -- token <token>         → sha256 hex for agents[].token_sha256
 * (`node dist/server/hash-secret.js …` in a production install.) Leave the value out (or pass "-") to read it from the first line of stdin, which keeps it out
 * of the shell history.
 */
import { text } from 'node:stream/consumers';
import { commandLine } from '../cli.ts';
import { hashPassword, hashToken } from './secrets.ts';

async function readStdinLine(): Promise<string> {
  return (await text(process.stdin)).split(/\r?\n/)[0] ?? '';
}

async function main(argv: string[]): Promise<number> {
  const [kind, given, ...rest] = argv;
  if ((kind !== 'password' && kind !== 'token') || rest.length > 0) {
    console.error(`usage: ${commandLine('password|token [<value> | -]')}`);
    return 2;
  }
  const value = given === undefined || given === '-' ? await readStdinLine() : given;
  if (value === '') {
    console.error(`hash-secret: the ${kind} is empty`);
    return 2;
  }
  console.log(kind === 'password' ? await hashPassword(value) : hashToken(value));
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
