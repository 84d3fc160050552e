import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

/**
 * Every metric of ours follows Prometheus' naming conventions (prometheus.io, "Metric and label
 * naming"): `interlock_` then snake case; a time in seconds and a size in bytes, named so
 * (`_seconds`, `_bytes`), never another unit; `_total` on counters and on nothing else. The
 * registry is read as a scraper reads it. prom-client's own figures (process_, nodejs_) keep
 * their names. The operators' metrics page names every one of ours.
 */

interface Family {
  name: string;
  type: string;
  help: string;
}

/** The families of a scrape, from its `# HELP` and `# TYPE` lines. */
function families(text: string): Family[] {
  const help = new Map<string, string>();
  const out: Family[] = [];
  for (const line of text.split('\n')) {
    const h = /^# HELP (\S+) (.*)$/.exec(line);
    if (h) help.set(h[1]!, h[2]!);
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) out.push({ name: t[1]!, type: t[2]!, help: help.get(t[1]!) ?? '' });
  }
  return out;
}

/** Units that are not base units, as a name would end or carry them. */
const OTHER_UNITS = /_(ms|msec|millis|milliseconds|microseconds|us|ns|nanoseconds|minutes|hours|days|kb|kib|mb|mib|gb|gib|kilobytes|megabytes|percent)(_|$)/;

describe('metric names', () => {
  let world: AppWorld;
  let ours: Family[];
  beforeAll(async () => {
    world = await buildAppWorld();
    const text = (await world.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })).body;
    ours = families(text).filter((f) => !/^(process|nodejs)_/.test(f.name));
  });
  afterAll(() => world.close());

  it('every one is interlock_ and snake case, with help text', () => {
    expect(ours.length).toBeGreaterThan(20);
    for (const f of ours) {
      expect(f.name, f.name).toMatch(/^interlock_[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
      expect(f.help.length, `${f.name} says what it counts`).toBeGreaterThan(10);
    }
  });

  it('_total on counters and only on counters; no unit but a base unit', () => {
    const wrong = ours.flatMap((f) => {
      const problems: string[] = [];
      if (f.type === 'counter' && !f.name.endsWith('_total')) problems.push(`${f.name}: a counter ends in _total`);
      if (f.type !== 'counter' && f.name.endsWith('_total')) problems.push(`${f.name}: only a counter ends in _total`);
      if (OTHER_UNITS.test(f.name)) problems.push(`${f.name}: times in seconds, sizes in bytes`);
      if ((f.type === 'histogram' || f.type === 'summary') && /duration|latency|time|wait/.test(f.name) && !f.name.endsWith('_seconds')) problems.push(`${f.name}: a duration ends in _seconds`);
      return problems;
    });
    expect(wrong).toEqual([]);
  });

  it("the operators' metrics page names every one", () => {
    const page = readFileSync(new URL('../../docs/operators/metrics-and-logs.md', import.meta.url), 'utf8');
    const missing = ours.filter((f) => !page.includes(`\`${f.name}`)).map((f) => f.name);
    expect(missing).toEqual([]);
  });
});
