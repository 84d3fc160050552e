import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { compiledScript } from './compiled-entries.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const childScript = fileURLToPath(new URL('./confirm-race-child.ts', import.meta.url));

/**
 * Deliver one webhook from `count` OS processes at once, each with its own connection to the
 * database `file`: every process opens the file and says ready, then all get the delivery in
 * the same moment. Returns what each recorded, in process order.
 */
export async function raceDeliveries(file: string, secret: string, delivery: { body: Buffer; header: string }, count: number): Promise<string[]> {
  const racers = Array.from({ length: count }, () => {
    const child = spawn(process.execPath, ['--enable-source-maps', compiledScript(childScript), file, secret], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { child, lines, exited };
  });
  const say = async (racer: (typeof racers)[number], step: string): Promise<Record<string, unknown>> => {
    const next = await racer.lines.next();
    if (next.done) throw new Error(`racer ${racer.child.pid} ended before "${step}"`);
    const message = JSON.parse(next.value) as Record<string, unknown>;
    if (message.step !== step) throw new Error(`racer ${racer.child.pid} said ${next.value}, expected "${step}"`);
    return message;
  };
  try {
    await Promise.all(racers.map((racer) => say(racer, 'ready')));
    const line = `${JSON.stringify({ payload: delivery.body.toString('base64'), header: delivery.header })}\n`;
    for (const racer of racers) racer.child.stdin.write(line);
    const done = await Promise.all(racers.map((racer) => say(racer, 'done')));
    const codes = await Promise.all(racers.map((racer) => racer.exited));
    if (codes.some((code) => code !== 0)) throw new Error(`racers exited with ${codes.join(', ')}`);
    return done.map((message) => String(message.result));
  } finally {
    // A racer left waiting by a failed step would outlive the test; end only the ones started here.
    for (const racer of racers) if (racer.child.exitCode === null) racer.child.kill();
  }
}
