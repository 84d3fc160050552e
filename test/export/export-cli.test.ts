import { spawn } from 'node:child_process';
import { createHash, createPrivateKey } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cefLineId, unescapeCefValue } from '../../server/export/cef.ts';
import { sentRecordPath } from '../../server/export/destinations.ts';
import { type OtlpSpan, spanIdOf, traceIdOf } from '../../server/export/otlp.ts';
import type { DecisionRecord, ReceiptRecord } from '../../server/export/records.ts';
import { PUBLIC_KEY_FILE, SIGNING_KEY_FILE } from '../../server/receipts/keys.ts';
import { runVerifyCli } from '../../server/receipts/verify-cli.ts';
import { AGENT_TOKEN, WEBHOOK_SECRET } from '../support/app-world.ts';
import { buildExportWorld, DAY_1, DAY_2, DAY_3, type ExportWorld, HOSTILE_REASON, linesOf, runExport, SECRETS } from './export-world.ts';
import { type OtlpReceiver, startOtlpReceiver } from './receiver.ts';
import { compiledEntry } from '../support/server-process.ts';

// The export command run as `npm run export` runs it, a child process, against a real data folder
// whose journal was written by real requests through the app and the Stripe sandbox.

let w: ExportWorld;
let receiver: OtlpReceiver;
/** Every byte any export wrote, for the secret search at the end. */
const exported: string[] = [];
/** Folders this file made, removed at the end. */
const folders: string[] = [];
function folder(prefix: string): string {
  const made = mkdtempSync(join(tmpdir(), prefix));
  folders.push(made);
  return made;
}
/** Day one as exported before its chains grew, by format. */
const dayOne: Record<string, string> = {};

beforeAll(async () => {
  w = await buildExportWorld();
  receiver = await startOtlpReceiver();
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await w?.world.close();
  for (const made of [...folders, w?.dir]) if (made) rmSync(made, { recursive: true, force: true });
});

async function exportOk(args: string[], expected = 0): Promise<string> {
  const run = await runExport(w.dir, args);
  expect(run.code, run.stderr).toBe(expected);
  exported.push(run.stdout);
  return run.stdout;
}

const day1 = ['--from', DAY_1, '--to', DAY_2];
const rows = (text: string) => linesOf(text).map((line) => JSON.parse(line) as ReceiptRecord | DecisionRecord);
const receiptRows = (text: string) => rows(text).filter((row): row is ReceiptRecord => row.record === 'receipt');
/** A CEF line's extension as keys and raw values: a key starts after a space and ends at an `=` no backslash escapes. */
function extensionOf(line: string): Record<string, string> {
  let pipes = 0;
  let start = 0;
  for (let i = 0; i < line.length && pipes < 7; i++) {
    if (line[i] === '\\') i++;
    else if (line[i] === '|' && ++pipes === 7) start = i + 1;
  }
  return Object.fromEntries(line.slice(start).split(/ (?=[A-Za-z0-9]+=)/).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}
const attribute = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value;

/** Reserved keywords of BigQuery's GoogleSQL: a column named one of them breaks a plain load or query. */
const RESERVED = new Set(
  'all and any array as asc assert_rows_modified at between by case cast collate contains create cross cube current default define desc distinct else end enum escape except exclude exists extract false fetch following for from full group grouping groups hash having if ignore in inner intersect interval into is join lateral left like limit lookup merge natural new no not null nulls of on or order outer over partition preceding proto qualify range recursive respect right rollup rows select set some struct tablesample then to treat true unbounded union unnest using when where window with within'.split(
    ' ',
  ),
);

describe('npm run export: ndjson', () => {
  // seed: tests/test_export.py BigQuery test_rows_follow_the_schema_and_rebuild_a_verifiable_chain, test_no_column_is_a_reserved_keyword_and_the_doc_shows_the_real_queries
  it('ndjson: one typed row per receipt and per decision of the period, each receipt verifying offline', async () => {
    const text = await exportOk(['--format', 'ndjson', ...day1]);
    dayOne.ndjson = text;
    const all = rows(text);
    const receipts = receiptRows(text);
    expect(receipts.map((r) => [r.effect_id, r.status, r.authority, r.verified])).toEqual([
      [w.effects.routine, 'COMMITTED', 'policy', true],
      [w.effects.approved, 'QUEUED', null, true],
      [w.effects.rejected, 'CLOSED', null, true],
      [w.effects.stale, 'CLOSED', null, true],
      [w.effects.repair, 'COMMITTED', 'ana', true],
    ]);
    const decisions = all.filter((row): row is DecisionRecord => row.record === 'decision');
    expect(decisions.map((d) => [d.effect_id, d.decision, d.decided_by, d.group_name])).toEqual([
      [w.effects.rejected, 'reject', 'ana', 'ap-leads'],
      [w.effects.stale, 'approve', 'ana', 'ap-leads'],
      [w.effects.stale, 'repair', 'ana', 'ap-leads'],
      // The repair (7,000 cents) is over the rule's limit too, so it waits for ap-leads; ana is there and approves it at once.
      [w.effects.repair, 'approve', 'ana', 'ap-leads'],
    ]);
    expect(decisions[0]!.reason).toBe(HOSTILE_REASON);
    expect(decisions[2]!.repair_request_id).toMatch(/^exp-stale:repair:/);
    // Typed and stable: every row of a kind has the same keys in the same order, cents and ms are numbers.
    for (const kind of ['receipt', 'decision']) {
      const keyLists = new Set(all.filter((row) => row.record === kind).map((row) => Object.keys(row).join(',')));
      expect(keyLists.size).toBe(1);
    }
    expect(receipts[0]).toMatchObject({ amount_asked_cents: 2_000, amount_sent_cents: 2_000, currency: 'usd', entry_count: 4, verify_problems: [] });
    expect(typeof receipts[0]!.first_at_ms).toBe('number');
    // A warehouse table takes every key as a column name.
    const keys = new Set(all.flatMap((row) => Object.keys(row)));
    expect([...keys].filter((key) => RESERVED.has(key) || !/^[a-z][a-z0-9_]*$/.test(key))).toEqual([]);
    // Each row's receipt is the signed receipt `npm run verify` accepts, with the folder's public key.
    const verifyFolder = folder('interlock-export-verify-');
    for (const receipt of receipts) {
      writeFileSync(join(verifyFolder, 'receipt.json'), receipt.receipt_json);
      const verified = await runVerifyCli([join(verifyFolder, 'receipt.json'), '--key', join(w.dir, PUBLIC_KEY_FILE)]);
      expect(verified.exitCode, verified.stdout).toBe(0);
      expect(JSON.parse(verified.stdout)).toMatchObject({ valid: true, signed: true, tamper_evident: true });
    }
  }, 60_000);
});

describe('npm run export: cef', () => {
  // seed: tests/test_export.py Siem test_cef_escapes_and_carries_the_event_id
  it('cef: one line per record whatever the values hold, escaped, each carrying its record id', async () => {
    const text = await exportOk(['--format', 'cef', ...day1]);
    dayOne.cef = text;
    const lines = linesOf(text);
    expect(lines).toHaveLength(9);
    for (const line of lines) expect(line.startsWith('CEF:0|Interlock|Interlock|1.0|')).toBe(true);
    const ids = rows(dayOne.ndjson!).map((row) => row.id);
    expect(lines.map(cefLineId)).toEqual(ids);
    const reject = lines.find((line) => line.includes('|decision:reject|'))!;
    expect(reject).not.toContain('\n');
    expect(unescapeCefValue(extensionOf(reject).msg ?? '')).toBe(HOSTILE_REASON);
    // The forged header inside the reason is text in a value: its `=` is escaped, so it names no key.
    expect(reject).toContain('externalId\\=r.fake');
  }, 60_000);

  // seed: tests/test_export.py Logging test_refused_is_a_warning_with_the_final_state
  it('cef: a refusal is a warning whatever the final state, which the line names', async () => {
    const stale = linesOf(dayOne.cef!).find((line) => line.includes(`cs1=${w.effects.stale}`) && line.includes('|Refund receipt|'))!;
    const [, , , , signature, , severity] = stale.split('|');
    expect([signature, severity]).toEqual(['receipt:CLOSED', '5']);
    expect(stale).toContain('act=CLOSED');
    expect(stale).toContain('flexString1Label=refusal flexString1=stale_premise');
    const routine = linesOf(dayOne.cef!).find((line) => line.includes(`cs1=${w.effects.routine}`))!;
    expect(routine.split('|')[6]).toBe('3');
  });
});

describe('npm run export: otlp', () => {
  // seed: tests/test_export.py Otlp test_one_span_per_effect_with_an_event_per_entry; Logging test_one_log_entry_per_journal_entry_plus_the_receipt
  it('otlp: one span per receipt with an event per entry, posted to a real receiver, ids from the journal', async () => {
    dayOne.otlp = await exportOk(['--format', 'otlp', ...day1]);
    await exportOk(['--format', 'otlp', ...day1, '--endpoint', receiver.url]);
    expect(receiver.requests.map((r) => [r.path, r.contentType])).toEqual([['/v1/traces', 'application/json']]);
    exported.push(...receiver.requests.map((r) => r.body));
    const body = JSON.parse(receiver.requests[0]!.body);
    expect(body.resourceSpans[0].resource.attributes).toEqual([
      { key: 'service.name', value: { stringValue: 'interlock' } },
      { key: 'service.version', value: { stringValue: '1.0' } },
    ]);
    const spans = receiver.spans();
    const receipts = receiptRows(dayOne.ndjson!);
    expect(spans.map((s) => s.spanId)).toEqual(receipts.map((r) => spanIdOf(r.id)));
    expect(spans.map((s) => s.traceId)).toEqual(receipts.map((r) => traceIdOf(r.effect_id)));
    for (const [i, span] of spans.entries()) {
      const receipt = receipts[i]!;
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(span.startTimeUnixNano).toBe(`${receipt.first_at_ms}000000`);
      expect(span.endTimeUnixNano).toBe(`${receipt.last_at_ms}000000`);
      const entries = JSON.parse(receipt.receipt_json).entries as { kind: string; hash: string; ts_ms: number }[];
      expect(span.events.map((e) => e.name)).toEqual(entries.map((e) => e.kind));
      expect(span.events.map((e) => e.timeUnixNano)).toEqual(entries.map((e) => `${e.ts_ms}000000`));
      expect(span.events.map((e) => e.attributes.find((a) => a.key === 'interlock.entry.hash')?.value)).toEqual(entries.map((e) => ({ stringValue: e.hash })));
      expect(attribute(span, 'interlock.verified')).toEqual({ boolValue: true });
      expect(span.status).toEqual({ code: 1 });
    }
    expect(attribute(spans[0]!, 'interlock.amount_sent_cents')).toEqual({ intValue: '2000' });
    // The file and the endpoint carry the same spans.
    expect(linesOf(dayOne.otlp).flatMap((line) => JSON.parse(line).resourceSpans[0].scopeSpans[0].spans)).toEqual(spans);
  }, 60_000);

  it('otlp: exporting the same period to the same endpoint again sends nothing, by the local record of what it holds', async () => {
    const run = await runExport(w.dir, ['--format', 'otlp', ...day1, '--endpoint', receiver.url]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('0 records written');
    expect(receiver.requests).toHaveLength(1);
    const record = readFileSync(sentRecordPath(w.dir, new URL(`${receiver.url}/v1/traces`)), 'utf8');
    expect(linesOf(record)).toEqual(receiptRows(dayOne.ndjson!).map((r) => r.id));
    exported.push(record);
  }, 60_000);

  // seed: tests/test_export.py Logging test_partial_rejection_is_a_failure; Otlp test_no_project_attribute_without_a_project_and_rejected_spans_fail
  it('otlp: a receiver that rejects spans is a failure; nothing is recorded as sent and the next export sends it all', async () => {
    const picky = await startOtlpReceiver();
    try {
      picky.rejectSpans = 2;
      const refused = await runExport(w.dir, ['--format', 'otlp', ...day1, '--endpoint', picky.url]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('rejected 2 of 5 spans: spans over quota');
      expect(existsSync(sentRecordPath(w.dir, new URL(`${picky.url}/v1/traces`)))).toBe(false);
      picky.rejectSpans = 0;
      await exportOk(['--format', 'otlp', ...day1, '--endpoint', picky.url]);
      expect(picky.spans()).toHaveLength(5);
      exported.push(...picky.requests.map((r) => r.body));
    } finally {
      await picky.close();
    }
  }, 60_000);
});

describe('npm run export: a period, again, after its chains grew', () => {
  let file: string;

  // seed: tests/test_export.py Siem test_appending_the_same_receipt_twice_writes_once
  it('appending the same receipts to one file writes each once', async () => {
    file = join(folder('interlock-export-file-'), 'audit.cef');
    await exportOk(['--format', 'cef', ...day1, '--out', file]);
    expect(readFileSync(file, 'utf8')).toBe(dayOne.cef);
    const again = await runExport(w.dir, ['--format', 'cef', ...day1, '--out', file]);
    expect([again.code, again.stderr]).toEqual([0, expect.stringContaining('0 records written')]);
    expect(readFileSync(file, 'utf8')).toBe(dayOne.cef);
  }, 60_000);

  // seed: tests/test_export.py Logging test_reexport_is_identical_and_a_grown_bundle_does_not_change_earlier_entries
  it('re-exporting a period after its chains grew gives the same bytes, and the grown receipt is a new version with its history unchanged', async () => {
    await w.approveOnDay2();
    for (const format of ['ndjson', 'cef', 'otlp']) expect(await exportOk(['--format', format, ...day1])).toBe(dayOne[format]);
    // Both days into the file of day one: day one's lines stay as they were, the day-two version and decision follow.
    await exportOk(['--format', 'cef', '--from', DAY_1, '--to', DAY_3, '--out', file]);
    const text = readFileSync(file, 'utf8');
    exported.push(text);
    expect(text.startsWith(dayOne.cef!)).toBe(true);
    const added = linesOf(text.slice(dayOne.cef!.length));
    expect(added.map((line) => line.split('|')[4])).toEqual(['receipt:COMMITTED', 'decision:approve']);
    expect(added[0]).toContain(`cs1=${w.effects.approved}`);
    const ids = linesOf(text).map(cefLineId);
    expect(new Set(ids).size).toBe(ids.length);
  }, 90_000);

  // seed: tests/test_export_authority_fixes.py ExportAuthority test_all_exporters_attribute_the_commit_to_alice, test_growing_the_chain_does_not_rewrite_historical_attribution
  it('all exporters attribute the commit to the approver, and an earlier version keeps its own attribution', async () => {
    const day2 = ['--from', DAY_2, '--to', DAY_3];
    const [receipt] = receiptRows(await exportOk(['--format', 'ndjson', ...day2]));
    expect(receipt).toMatchObject({ effect_id: w.effects.approved, status: 'COMMITTED', authority: 'ana', verified: true });
    const cef = linesOf(await exportOk(['--format', 'cef', ...day2]));
    expect(cef[0]).toContain('duser=ana');
    const [span] = linesOf(await exportOk(['--format', 'otlp', ...day2])).map((line) => JSON.parse(line).resourceSpans[0].scopeSpans[0].spans[0] as OtlpSpan);
    expect(attribute(span!, 'interlock.authority')).toEqual({ stringValue: 'ana' });
    const dispatched = span!.events.find((e) => e.name === 'DISPATCHED')!;
    expect(dispatched.attributes.find((a) => a.key === 'interlock.authority')?.value).toEqual({ stringValue: 'ana' });
    // Day one's version of the same receipt still says nobody had sent it.
    const before = receiptRows(dayOne.ndjson!).find((r) => r.effect_id === w.effects.approved)!;
    expect([before.status, before.authority, before.id === receipt!.id]).toEqual(['QUEUED', null, false]);
  }, 90_000);
});

describe('npm run export: what it refuses', () => {
  it('a tampered receipt is exported with verified:false and why, and the command exits 2', async () => {
    const copy = folder('interlock-export-tampered-');
    for (const name of [SIGNING_KEY_FILE, PUBLIC_KEY_FILE]) writeFileSync(join(copy, name), readFileSync(join(w.dir, name)));
    // The app keeps running; the copy is made by SQLite itself, consistent under WAL.
    const source = new Database(join(w.dir, 'interlock.sqlite'), { readonly: true });
    source.exec(`VACUUM INTO '${join(copy, 'interlock.sqlite')}'`);
    source.close();
    const tampered = new Database(join(copy, 'interlock.sqlite'));
    tampered.exec('DROP TRIGGER entries_no_update');
    const changed = tampered
      .prepare(`UPDATE entries SET body = replace(body, '"amount":2000', '"amount":20000') WHERE effect_id = ? AND kind = 'COMMITTED'`)
      .run(w.effects.routine);
    expect(changed.changes).toBe(1);
    tampered.close();
    const run = await runExport(copy, ['--format', 'ndjson', ...day1]);
    exported.push(run.stdout);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`receipt ${w.effects.routine} does not verify: altered_entry`);
    // The journal as a whole fails the check start-up makes (an edited row, a dropped trigger), so
    // no receipt of it is vouched for under a fresh signature, however its own chain verifies.
    expect(run.stderr).toContain('the journal fails the check start-up makes (journal_damaged: ');
    const receipts = receiptRows(run.stdout);
    expect(receipts.map((r) => [r.effect_id, r.verified])).toEqual(receiptRows(dayOne.ndjson!).map((r) => [r.effect_id, false]));
    expect(receipts[0]!.verify_problems).toEqual([expect.stringMatching(/^altered_entry: /), expect.stringMatching(/^journal_damaged: /)]);
    for (const receipt of receipts.slice(1)) expect(receipt.verify_problems).toEqual([expect.stringMatching(/^journal_damaged: /)]);
    const decisionsOfRoutine = rows(run.stdout).filter((row) => row.record === 'decision' && row.effect_id === w.effects.routine);
    expect(decisionsOfRoutine).toEqual([]);
  }, 60_000);

  it('bad arguments: exit 64 with the usage, and the --out file is left as it was', async () => {
    const badFolder = folder('interlock-export-bad-');
    const out = join(badFolder, 'audit.ndjson');
    writeFileSync(out, 'kept\n');
    const cases = [
      ['--format', 'xml', ...day1, '--out', out],
      ['--format', 'ndjson', '--from', '2026-01-05T09:00', '--to', DAY_2, '--out', out],
      ['--format', 'ndjson', '--from', DAY_2, '--to', DAY_1, '--out', out],
    ];
    for (const args of cases) {
      const run = await runExport(w.dir, args);
      expect([run.code, run.stdout]).toEqual([64, '']);
      expect(run.stderr).toContain(`usage: node ${relative(join(import.meta.dirname, '..', '..'), compiledEntry('export'))} --format `);
    }
    expect(readFileSync(out, 'utf8')).toBe('kept\n');
    expect(readdirSync(badFolder)).toEqual(['audit.ndjson']);
  }, 60_000);
});

/** A value's shape: its keys in order and the type of every leaf, so two lines of one kind compare whatever their ids. */
function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shapeOf);
  if (typeof value === 'object' && value !== null) return Object.entries(value).map(([key, inner]) => [key, shapeOf(inner)]);
  return value === null ? 'null' : typeof value;
}

describe('the exports page', () => {
  it('a reader that closes the pipe early (npm run export … | head) ends the export quietly: exit 0, no stack trace', async () => {
    const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('export'), '--format', 'ndjson', ...day1], {
      cwd: process.cwd(),
      env: { ...process.env, DATA_DIR: w.dir, DB_PATH: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Closed before the command writes its first line, as `head -c 0` would.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', (exit) => resolve(exit)));
    expect(stderr).not.toContain('EPIPE');
    expect([code, stderr]).toEqual([0, '']);
  });

  it('the exports page shows one line of each format with the shape of what the command writes', () => {
    const section = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'finance', 'exports.md'), 'utf8');
    const example = (prefix: string) => section.split('\n').find((line) => line.startsWith(prefix));
    const decision = JSON.parse(example('{"record":"decision"')!);
    const real = rows(dayOne.ndjson!).find((row) => row.record === 'decision' && row.decision === decision.decision);
    expect(shapeOf(decision)).toEqual(shapeOf(real));
    const cef = example('CEF:0|')!;
    const signature = cef.split('|')[4];
    const realCef = linesOf(dayOne.cef!).find((line) => line.split('|')[4] === signature)!;
    expect(cef.split('|').slice(0, 7)).toEqual(realCef.split('|').slice(0, 7));
    expect(Object.keys(extensionOf(cef))).toEqual(Object.keys(extensionOf(realCef)));
    const otlp = JSON.parse(example('{"resourceSpans"')!);
    const status = otlp.resourceSpans[0].scopeSpans[0].spans[0].name;
    const realOtlp = linesOf(dayOne.otlp!).map((line) => JSON.parse(line)).find((body) => body.resourceSpans[0].scopeSpans[0].spans[0].name === status && JSON.stringify(body).includes('"DECIDED"'));
    expect(shapeOf(otlp)).toEqual(shapeOf(realOtlp));
  });
});

describe('npm run export: no secret leaves', () => {
  it('no export holds an agent token, a password hash, a webhook or notification secret, or the signing key', () => {
    expect(exported.length).toBeGreaterThan(15);
    const pem = readFileSync(join(w.dir, SIGNING_KEY_FILE), 'utf8');
    const jwk = createPrivateKey(pem).export({ format: 'jwk' });
    const seed = Buffer.from(String(jwk.d), 'base64url');
    const secrets: Record<string, string> = {
      'agent token': AGENT_TOKEN,
      "agent token's SHA-256": createHash('sha256').update(AGENT_TOKEN).digest('hex'),
      'password hash': 'scrypt$',
      'Stripe webhook secret': WEBHOOK_SECRET,
      'SMTP password': SECRETS.smtpPassword,
      'Slack webhook URL': SECRETS.slackPath.split('/').at(-1)!,
      "a person's webhook secret": SECRETS.personWebhookSecret,
      "an agent's callback secret": SECRETS.callbackSecret,
      'private key (PEM)': pem.split('\n')[1]!,
      'private key (hex)': seed.toString('hex'),
      'private key (base64)': seed.toString('base64').replace(/=+$/, ''),
      'private key (base64url)': seed.toString('base64url'),
    };
    const everything = exported.join('\n');
    const found = Object.entries(secrets).filter(([, secret]) => everything.includes(secret)).map(([name]) => name);
    expect(found).toEqual([]);
    // The outbox's messages (chains beside the refunds') are in the journal the export read.
    const journal = JSON.stringify(new Database(join(w.dir, 'interlock.sqlite'), { readonly: true }).prepare("SELECT body FROM entries WHERE kind = 'MESSAGE'").all());
    expect(journal.length).toBeGreaterThan(2);
  });
});
