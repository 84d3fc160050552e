import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { cefLineId, escapeCefHeader, escapeCefValue, unescapeCefValue } from '../../server/export/cef.ts';
import { parseTime, readExportArguments, runExportCli } from '../../server/export/export-cli.ts';

/** Values a person or an agent could type, each aimed at a CEF reader. */
const HOSTILE = [
  'plain',
  'pipe|in|it',
  'back\\slash\\',
  'key=value other=thing',
  'line one\nline two\r\nline three\rfour',
  '\\=',
  '\\\\n is not a newline',
  'CEF:0|Evil|Evil|1|x|y|10|externalId=r.forged',
  '',
];

describe('CEF escaping', () => {
  it.each(HOSTILE)('an extension value %j is escaped to one line with no bare = and reads back as it was', (value) => {
    const escaped = escapeCefValue(value);
    expect(escaped).not.toMatch(/[\r\n]/);
    // Every `=` is escaped: drop escaped pairs and none is left.
    expect(escaped.replace(/\\./g, '')).not.toContain('=');
    expect(unescapeCefValue(escaped)).toBe(value);
  });

  it.each(HOSTILE)('a header field %j has its pipes and backslashes escaped and no line break', (value) => {
    const escaped = escapeCefHeader(value);
    expect(escaped).not.toMatch(/[\r\n]/);
    expect(escaped.replace(/\\./g, '')).not.toMatch(/[|\\]/);
  });

  it('the record id is read from the extension only: a forged externalId in a value or a header is not taken', () => {
    const line = `CEF:0|Interlock|Interlock|1.0|${escapeCefHeader('a|externalId=r.header')}|Name|3|externalId=r.real msg=${escapeCefValue(' externalId=r.value')}`;
    expect(cefLineId(line)).toBe('r.real');
    expect(cefLineId('CEF:0|Interlock|only|four|fields')).toBeNull();
  });
});

describe('export arguments', () => {
  it.each([
    ['1767603600000', 1_767_603_600_000],
    ['2026-01-05', Date.UTC(2026, 0, 5)],
    ['2026-01-05T09:00:00Z', Date.UTC(2026, 0, 5, 9)],
    ['2026-01-05T10:00:00+01:00', Date.UTC(2026, 0, 5, 9)],
    ['2026-01-05T09:00:00.250Z', Date.UTC(2026, 0, 5, 9, 0, 0, 250)],
  ])('a time %s is %d ms', (text, ms) => {
    expect(parseTime('from', text)).toBe(ms);
  });

  it.each(['2026-01-05T09:00', 'yesterday', '-5', '1e12', '2026-13-01', '99999999999999999'])('a time %j is refused', (text) => {
    expect(() => parseTime('from', text)).toThrow(/--from must be/);
  });

  it.each([
    [[], /--format must be one of otlp, cef, ndjson/],
    [['--format', 'cef', '--from', '2026-01-05'], /--from and --to are both required/],
    [['--format', 'cef', '--from', '2026-01-05', '--to', '2026-01-05'], /--from must be before --to/],
    [['--format', 'cef', '--from', '2026-01-05', '--to', '2026-01-06', '--endpoint', 'http://127.0.0.1:4318'], /--endpoint takes OTLP spans only/],
    [['--format', 'otlp', '--from', '2026-01-05', '--to', '2026-01-06', '--endpoint', 'ftp://x'], /--endpoint must be an http/],
    [['--format', 'otlp', '--from', '2026-01-05', '--to', '2026-01-06', '--endpoint', 'http://u:p@127.0.0.1:4318'], /no credentials/],
    [['--format', 'otlp', '--from', '2026-01-05', '--to', '2026-01-06', '--endpoint', 'http://h', '--out', 'x'], /not both/],
    [['--format', 'ndjson', '--from', '2026-01-05', '--to', '2026-01-06', '--out', '/no/such/folder/x'], /does not exist/],
    [['--format', 'ndjson', '--from', '2026-01-05', '--to', '2026-01-06', '--bogus'], /Unknown option/],
  ])('%j exits 64 with what is wrong and the usage', async (args, message) => {
    let stderr = '';
    const sink = (write: (text: string) => void) =>
      new Writable({
        write(chunk, _encoding, done) {
          write(String(chunk));
          done();
        },
      });
    const code = await runExportCli(args, {}, { stdout: sink(() => {}), stderr: sink((text) => (stderr += text)) });
    expect(code).toBe(64);
    expect(stderr).toMatch(message);
    expect(stderr).toMatch(/^usage: .+ --format otlp\|cef\|ndjson --from /m);
  });

  it.each(['ftp://audit.example/?api_key=Hunter2sekrit', 'http://audit:Hunter2sekrit@', 'http://audit:Hunter2sekrit@audit.example/?api_key=Hunter2sekrit'])(
    'a refused --endpoint never echoes its password or query: %s',
    async (endpoint) => {
      let stderr = '';
      const sink = new Writable({
        write(chunk, _encoding, done) {
          stderr += String(chunk);
          done();
        },
      });
      const args = ['--format', 'otlp', '--from', '2026-01-05', '--to', '2026-01-06', '--endpoint', endpoint];
      expect(await runExportCli(args, {}, { stdout: new Writable({ write: (_c, _e, done) => done() }), stderr: sink })).toBe(64);
      expect(stderr).toContain('--endpoint must be an http:// or https:// URL');
      expect(stderr).not.toContain('Hunter2sekrit');
    },
  );

  it('an endpoint is a base URL: spans go to its /v1/traces', () => {
    const base = ['--format', 'otlp', '--from', '0', '--to', '1'];
    const urlOf = (endpoint: string) => {
      const parsed = readExportArguments([...base, '--endpoint', endpoint]);
      return parsed?.target.kind === 'otlp' ? parsed.target.url.href : null;
    };
    expect(urlOf('http://127.0.0.1:4318')).toBe('http://127.0.0.1:4318/v1/traces');
    expect(urlOf('http://collector/otel/')).toBe('http://collector/otel/v1/traces');
    expect(urlOf('https://collector/v1/traces')).toBe('https://collector/v1/traces');
  });
});
