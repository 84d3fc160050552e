import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { buildPackages, packPackages } from '../../scripts/build-packages.ts';
import { createInterlockClient } from '../../shared/client/index.ts';
import { type ListeningWorld, startListeningWorld } from '../client/listening-world.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';

// The packages as an integrator gets them: built and packed (`npm pack`), installed from the
// tarballs into an empty folder with npm's own install, then used from there only: the client from
// plain Node, its declarations from a TypeScript consumer under node16 resolution, and the
// `interlock-mcp` command by an MCP client, against the whole server listening on a real port.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
/** In memory where there is a tmpfs: the install writes a few thousand small files. */
const SCRATCH = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
/** The install from npm's cache is most of the test: a few seconds; past this something is broken. */
const SETUP_TIMEOUT_MS = 90_000;

let dir: string;
let app: string;
let live: ListeningWorld;
/** The environment the installed programs run with: Interlock's address and the agent's token. */
let env: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(SCRATCH, 'interlock-packages-'));
  app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'integrator', private: true, type: 'module' }));
  [live] = await Promise.all([startListeningWorld(), buildPackages()]);
  const tarballs = await packPackages(join(dir, 'packs'));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', ...tarballs], { cwd: app });
  // `#!/usr/bin/env node` finds the node running the tests.
  env = { PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, INTERLOCK_URL: live.url, INTERLOCK_AGENT_TOKEN: AGENT_TOKEN };
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await live?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// They read nothing of each other: at once, they take the longest one's time. Each starts a
// process or two (npx alone took 9.8 s on a 2-core machine at a load of 15).
describe.concurrent('the packages installed from their tarballs', { timeout: 40_000 }, () => {
  it("carry the project's version and licence, and the MCP package pins the project's SDK and zod", ({ expect }) => {
    const manifest = (path: string) => JSON.parse(readFileSync(join(root, path), 'utf8'));
    const project = manifest('package.json');
    const [client, mcp] = [manifest('packages/client/package.json'), manifest('packages/mcp/package.json')];
    for (const pkg of [client, mcp]) expect(pkg).toMatchObject({ version: project.version, license: project.license, type: 'module', engines: project.engines });
    expect(mcp.dependencies).toEqual({
      [client.name]: project.version,
      '@modelcontextprotocol/sdk': project.dependencies['@modelcontextprotocol/sdk'],
      zod: project.dependencies.zod,
    });
    expect(client.dependencies).toEqual({ typebox: project.dependencies.typebox });
  });


  it('plain Node imports the client and asks the running server for a refund, which the server then holds', async ({ expect }) => {
    const pi = await live.world.payment(10_000);
    const script = join(app, 'ask.mjs');
    writeFileSync(
      script,
      [
        "import { createInterlockClient } from '@interlock-placeholder/client';",
        'const interlock = createInterlockClient({ baseUrl: process.env.INTERLOCK_URL, token: process.env.INTERLOCK_AGENT_TOKEN });',
        `const { answer } = await interlock.requestRefund({ request_id: 'pkg-1', payment_intent: ${JSON.stringify(pi)}, amount: 1000 });`,
        'console.log(JSON.stringify(answer));',
      ].join('\n'),
    );
    const { stdout } = await run(process.execPath, [script], { cwd: app, env: { ...process.env, ...env } });
    // Sent at once or queued (a loaded shared process has seen both): either way the server's decision.
    const answer = JSON.parse(stdout);
    const held = await createInterlockClient({ baseUrl: live.url, token: AGENT_TOKEN }).getRefund('pkg-1');
    expect(answer).toMatchObject({ request_id: 'pkg-1', effect_id: held.answer.effect_id, status: expect.stringMatching(/^(COMMITTED|QUEUED)$/) });
  });

  it('a TypeScript consumer type-checks under node16 resolution, and no declaration names a .ts module', async ({ expect }) => {
    writeFileSync(
      join(app, 'consumer.ts'),
      [
        "import { createInterlockClient, type InterlockClient, isInterlockClientError, type RefundResult } from '@interlock-placeholder/client';",
        "import { createMcpServer } from '@interlock-placeholder/mcp';",
        "const interlock: InterlockClient = createInterlockClient({ baseUrl: 'http://127.0.0.1:3000', token: 'sk_agent_x' });",
        "const result: RefundResult = await interlock.getRefund('case-1');",
        'export const status: string = result.answer.status;',
        'export const typed: boolean = isInterlockClientError(new Error());',
        // Were the declarations unresolved (any), this line would be no error, and the directive one.
        '// @ts-expect-error amount is a number of the smallest currency unit',
        "await interlock.requestRefund({ request_id: 'case-2', payment_intent: 'pi_1', amount: '10' });",
        'createMcpServer(interlock, () => {});',
      ].join('\n'),
    );
    const compilerOptions = {
      target: 'ES2022',
      module: 'node16',
      moduleResolution: 'node16',
      lib: ['ES2023', 'DOM'],
      strict: true,
      noEmit: true,
      // As most projects do: checking zod's and the MCP SDK's own declarations too took 27 s.
      skipLibCheck: true,
      types: ['node'],
      typeRoots: [join(root, 'node_modules/@types')],
    };
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['consumer.ts'] }));
    const checked = await run(join(root, 'node_modules/typescript/bin/tsc'), ['-p', app]).catch((error: { stdout: string }) => error);
    expect(checked.stdout).toBe('');
    const installed = join(app, 'node_modules/@interlock-placeholder');
    const declarations = readdirSync(installed, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.d.ts'));
    expect(declarations).toContain('client/dist/client/index.d.ts');
    // TypeScript itself reads `./client.ts` in a declaration as `./client.d.ts` (the check above
    // passes with one), but editors and tools that follow the declarations as modules do not.
    const naming = declarations.filter((file) => /(['"])\.\.?\/[^'"\n]*\.m?ts\1/.test(readFileSync(join(installed, file), 'utf8')));
    expect(naming).toEqual([]);
  });

  it('`npx interlock-mcp --help` prints its usage and the environment it reads, and exits 0', async ({ expect }) => {
    const { stdout } = await run('npx', ['--no', '--', 'interlock-mcp', '--help'], { cwd: app, env: { ...process.env, ...env } });
    expect(stdout).toContain('Usage: interlock-mcp');
    expect(stdout).toContain('INTERLOCK_URL');
    expect(stdout).toContain('INTERLOCK_AGENT_TOKEN');
  });

  it('an MCP client starts the installed interlock-mcp, lists its four tools, and reads a refund through it', async ({ expect }) => {
    const transport = new StdioClientTransport({ command: join(app, 'node_modules/.bin/interlock-mcp'), cwd: app, env, stderr: 'pipe' });
    const mcp = new Client({ name: 'integrator', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      const { tools } = await mcp.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['get_refund', 'request_refund', 'verify_receipt', 'wait_for_decision']);
      const read = await mcp.callTool({ name: 'get_refund', arguments: { request_id: 'pkg-never-asked' } });
      expect(read).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringMatching(/^not_found \(HTTP 404\)/) }] });
    } finally {
      await mcp.close();
    }
  });
});
