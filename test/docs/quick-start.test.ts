import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, onFreePorts, untilReady } from '../../bench/ready.ts';
import { fencedBlocks, readPage, root } from './pages.ts';

// The README's quick start as a newcomer runs it: a real server started as `npm start` starts it
// (the shipped interlock.yaml, the embedded sandbox with its demo payments and traffic) on a fresh
// data folder, then the README's curl commands, parsed from its fenced block with BASE and SANDBOX
// set to this server's addresses, each answering as the comment under it says.

const READY_TIMEOUT_MS = 60_000;

/** One command of the block (continuation lines joined as the shell joins them) and the answer it shows. */
interface Step {
  command: string;
  /** The `# {…}` comment right under the command (and its indented lines): the answer, `…` standing for what varies. */
  shows: string | null;
}

/** The README section's first `sh` block. */
function quickStartBlock(heading: string): string {
  const readme = readPage('README.md');
  const start = readme.indexOf(`\n## ${heading}\n`);
  expect(start, `README has no "## ${heading}"`).toBeGreaterThan(0);
  const end = readme.indexOf('\n## ', start + 1);
  const [block] = fencedBlocks(readme.slice(start, end === -1 ? undefined : end), 'sh');
  return block ?? '';
}

/** The block's commands in order, each with the answer its comment shows. */
function stepsOf(block: string): Step[] {
  const steps: Step[] = [];
  let pending = '';
  for (const line of block.split('\n')) {
    if (pending === '' && line.startsWith('#')) {
      const last = steps.at(-1);
      // An answer is the comment right under its command; any other comment says what comes next.
      if (last && last.shows === null && line.startsWith('# {')) last.shows = line.slice(2);
      // An answer too long for a line goes on under it, indented.
      else if (last?.shows && line.startsWith('#  ')) last.shows += line.slice(3);
      else if (last) last.shows ??= '';
      continue;
    }
    if (line.trim() === '') continue;
    pending += pending === '' ? line : `\n${line}`;
    if (!line.endsWith('\\')) {
      steps.push({ command: pending, shows: null });
      pending = '';
    }
  }
  return steps.map((step) => ({ ...step, shows: step.shows === '' ? null : step.shows }));
}

/** What an answer comment promises: each `"key":"value"` it names, a value ending in `…` as a prefix. */
function promises(shows: string): { key: string; value: string; prefix: boolean }[] {
  return [...shows.matchAll(/"([a-z_]+)":"([^"]*)"/g)]
    .filter(([, , value]) => value !== '…')
    .map(([, key, value]) => ({ key: key!, value: value!.replace(/…$/, ''), prefix: value!.endsWith('…') }));
}

/** Whether `answer` keeps every promise of `shows`, and which it breaks. */
function broken(shows: string, answer: string): string[] {
  return promises(shows)
    .filter(({ key, value, prefix }) => !answer.includes(prefix ? `"${key}":"${value}` : `"${key}":"${value}"`))
    .map(({ key, value }) => `${key}: ${value}`);
}

/** Run the steps in one shell, as a reader pastes them; each step's standard output. */
async function runSteps(steps: Step[], env: Record<string, string>): Promise<string[]> {
  const marker = '@@step@@';
  const script = ['set -u', ...steps.flatMap((step) => [step.command, `printf '\\n${marker}\\n'`])].join('\n');
  const child = spawn('bash', ['-c', script], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  expect([code, err]).toEqual([0, '']);
  return out
    .split(`\n${marker}\n`)
    .slice(0, steps.length)
    .map((text) => text.trim());
}

let dir: string;
let server: ChildProcess | null = null;
let base = '';
let sandbox = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-quick-start-'));
  await onFreePorts(async (attempt) => {
    const [port, sandboxPort] = [await freePort(), await freePort()];
    // npm start's environment on a fresh data folder: nothing of the test run's own settings.
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), SANDBOX_PORT: String(sandboxPort), DATA_DIR: join(dir, `data-${attempt}`), LOG_LEVEL: 'silent' };
    for (const name of ['DB_PATH', 'INTERLOCK_CONFIG', 'INTERLOCK_DEMO', 'SANDBOX_DEMO', 'SANDBOX_RATE_LIMITS', 'STRIPE_SANDBOX_URL', 'STRIPE_SECRET_KEY', 'RECEIPT_KEY_PATH']) delete env[name];
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    server = child;
    base = `http://127.0.0.1:${port}`;
    sandbox = `http://127.0.0.1:${sandboxPort}`;
    await untilReady(child, base, () => stderr, READY_TIMEOUT_MS, async () => child.kill('SIGKILL'));
  });
}, READY_TIMEOUT_MS * 2);

afterAll(async () => {
  const child = server;
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

describe("the README's quick start, on a fresh data folder", () => {
  const block = quickStartBlock('The first refund');
  const steps = stepsOf(block);
  let answers: string[] = [];

  it("sets BASE and SANDBOX to npm start's addresses before any command uses them", () => {
    expect(steps[0]?.command).toBe('BASE=http://127.0.0.1:3000');
    expect(steps[1]?.command).toBe('SANDBOX=http://127.0.0.1:12111');
    expect(steps.slice(2).every((step) => !/localhost|127\.0\.0\.1|:3000|:12111/.test(step.command))).toBe(true);
  });

  it('every command answers as the comment under it says', async () => {
    const ours = steps.map((step, i) =>
      i === 0 ? { ...step, command: `BASE=${base}` } : i === 1 ? { ...step, command: `SANDBOX=${sandbox}` } : step,
    );
    answers = await runSteps(ours, {});
    expect(steps.filter((step) => step.shows !== null).length).toBeGreaterThanOrEqual(5);
    const results = steps.map((step, i) => ({
      command: step.command.split('\n')[0],
      answer: answers[i],
      broken: step.shows === null ? (answers[i] === '' ? [] : ['an answer the README does not show']) : broken(step.shows, answers[i] ?? ''),
    }));
    expect(results.filter((result) => result.broken.length > 0)).toEqual([]);
    for (const [i, step] of steps.entries()) if (step.shows !== null) JSON.parse(answers[i]!);
  }, 60_000);

  it('the queued request waits in the inbox of the person the README names, who logs in with the password it gives', async () => {
    const readme = readPage('README.md');
    const [, name, password, requestId] = /log in as `(\w+)` with the demo password\s+`([^`]+)`:\s+(case-\d+) waits in the inbox/.exec(readme) ?? [];
    expect(name && password && requestId).toBeTruthy();
    const queued = answers.map((answer) => (answer.startsWith('{') ? JSON.parse(answer) : null)).find((a) => a?.request_id === requestId);
    expect(queued?.status).toBe('QUEUED');
    const login = await fetch(`${base}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, password }) });
    expect(login.status).toBe(200);
    const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;
    const csrf = ((await login.json()) as { csrf_token: string }).csrf_token;
    const inbox = (await (await fetch(`${base}/api/inbox`, { headers: { cookie } })).json()) as { items: { effect_id: string; escalation: string }[] };
    const item = inbox.items.find((candidate) => candidate.effect_id === queued.effect_id);
    expect(item).toBeDefined();

    // "Approve it and the agent's next ask answers `COMMITTED`."
    expect(readme).toContain("Approve it and the agent's next ask answers `COMMITTED`");
    const decided = await fetch(`${base}/api/items/${queued.effect_id}/decisions`, {
      method: 'POST',
      headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'approve', escalation: item!.escalation }),
    });
    expect(decided.status).toBe(200);
    const askAgain = steps.find((step) => step.command.includes(`/v1/refunds/${requestId}`));
    expect(askAgain).toBeDefined();
    let status = '';
    for (let i = 0; i < 50 && status !== 'COMMITTED'; i++) {
      const [answer] = await runSteps([{ command: `BASE=${base}`, shows: null }, askAgain!], {}).then((out) => out.slice(1));
      status = JSON.parse(answer!).status;
      if (status !== 'COMMITTED') await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status).toBe('COMMITTED');
  }, 60_000);
});

describe('reading the quick start', () => {
  it('pairs each command with the answer right under it, not with the comment before the next', () => {
    const steps = stepsOf('X=1\n# the first\ncurl a \\\n  b\n# {"status":"QUEUED",\n#  "why":"x",…}\n# next\ncurl c\n');
    expect(steps).toEqual([
      { command: 'X=1', shows: null },
      { command: 'curl a \\\n  b', shows: '{"status":"QUEUED","why":"x",…}' },
      { command: 'curl c', shows: null },
    ]);
  });

  it('holds an answer to every value its comment names, `…` as a prefix or anything', () => {
    const shows = '{"request_id":"case-1","effect_id":"…","message":"request case-1 was …"}';
    expect(broken(shows, '{"request_id":"case-1","effect_id":"abc","message":"request case-1 was made"}')).toEqual([]);
    expect(broken(shows, '{"request_id":"case-2","effect_id":"abc","message":"other"}')).toEqual(['request_id: case-1', 'message: request case-1 was ']);
  });
});
