import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  BENCH_JSON,
  BENCH_MD,
  type BenchReport,
  FIGURE_NAMES,
  FIGURE_SECTION,
  type FigureName,
  figureIn,
  figureOf,
  meets,
  NOT_IN_THIS_RUN,
  recordStageRun,
  REPORT_SECTIONS,
  renderBenchMarkdown,
  SECTION_TEXT,
  TARGETS,
} from '../../bench/report.ts';

// results/bench.{json,md} come from `npm run bench`, not from `npm run experiments`: the markdown
// is rendered from the JSON, so the two must agree; the figures are whatever that run measured.

function syntheticReport(overrides: Partial<Record<FigureName, number[]>>): BenchReport {
  const figures = Object.fromEntries(
    FIGURE_NAMES.map((name) => [name, figureOf('/s', name, overrides[name] ?? [1, 2, 3], TARGETS[name] ?? null)]),
  ) as BenchReport['figures'];
  return {
    generated_at: '2026-01-01T00:00:00.000Z',
    command: 'npm run bench',
    machine: { cpus: 2, cpu_model: 'test', memory_gib: 1, node: 'v20', load_start: 0.5, load_end: 0.5 },
    repetitions: 3,
    figures,
    details: {},
    profiles: [],
    notes: ['a note'],
  };
}

describe('bench report', () => {
  it('figureOf: the median of the repetitions, their spread, and whether the median meets the target', () => {
    const figure = figureOf('/s', 'x', [30, 10, 20], { op: '>=', value: 15 });
    expect(figure).toMatchObject({ median: 20, min: 10, max: 30, met: true });
    expect(figureOf('ms', 'x', [4, 6], { op: '<=', value: 4 })).toMatchObject({ median: 5, met: false });
    expect(figureOf('ms', 'x', [], null, 'stage failed')).toMatchObject({ median: null, met: null, error: 'stage failed' });
  });

  it('render: a missed target is marked MISSED and named at the top; a failed figure NOT MEASURED', () => {
    const report = syntheticReport({ gate_effects_per_s: [100, 120, 110] });
    report.figures.rebuild_s_1m = figureOf('s', 'x', [], TARGETS.rebuild_s_1m ?? null, 'rebuild failed: boom');
    const md = renderBenchMarkdown(report);
    expect(md).toMatch(/\| `gate_effects_per_s` \| 110 \/s \| 100–120 \| >= 20,000 \| \*\*MISSED\*\* \|/);
    expect(md).toContain('**NOT MEASURED**: rebuild failed: boom');
    expect(md).toMatch(/Targets missed or not measured: .*`gate_effects_per_s`.*`rebuild_s_1m`/);
  });

  it('render: each headline figure once, under the heading of what it measures, the sections in their order', () => {
    const md = renderBenchMarkdown(syntheticReport({}));
    const headingAt = REPORT_SECTIONS.map((section) => md.indexOf(`\n### ${SECTION_TEXT[section].heading}\n`));
    expect(headingAt.every((at) => at > 0)).toBe(true);
    expect([...headingAt].sort((a, b) => a - b)).toEqual(headingAt);
    for (const name of FIGURE_NAMES) {
      const row = `| \`${name}\` |`;
      expect(md.split(row), name).toHaveLength(2);
      const section = REPORT_SECTIONS.indexOf(FIGURE_SECTION[name]);
      const at = md.indexOf(row);
      expect(at, name).toBeGreaterThan(headingAt[section]!);
      if (section + 1 < headingAt.length) expect(at, name).toBeLessThan(headingAt[section + 1]!);
    }
    expect(SECTION_TEXT[FIGURE_SECTION.http_refunds_per_s].heading).toBe('Interlock over HTTP, against a sandbox without limits');
    expect(SECTION_TEXT[FIGURE_SECTION.burst_settle_s_live].heading).toBe("Interlock over HTTP, under Stripe's rate limits");
  });

  it('render: a figure added after the run that wrote the results is NOT MEASURED and named at the top, never dropped', () => {
    const report = syntheticReport({});
    delete (report.figures as Partial<BenchReport['figures']>).stale_chip_p95_ms;
    expect(figureIn(report, 'stale_chip_p95_ms')).toMatchObject({ median: null, met: null, target: TARGETS.stale_chip_p95_ms, error: NOT_IN_THIS_RUN });
    const md = renderBenchMarkdown(report);
    expect(md).toMatch(/\| `stale_chip_p95_ms` \| — ms \| —–— \| <= 1,000 \| \*\*NOT MEASURED\*\*: not in this run/);
    expect(md).toMatch(/Targets missed or not measured: .*`stale_chip_p95_ms`/);
  });

  it('record: a stage run alone replaces only the figures it measured, and the page names it with its own time and load', () => {
    const whole = syntheticReport({ gate_effects_per_s: [100, 120, 110], rebuild_s_1m: [9, 10, 11] });
    const stage = syntheticReport({ rebuild_s_1m: [12, 13, 14] });
    stage.command = 'npm run bench -- --only rebuild --journals <dir> --record';
    stage.generated_at = '2026-02-02T00:00:00.000Z';
    stage.machine.load_start = 3.5;
    stage.figures = { rebuild_s_1m: stage.figures.rebuild_s_1m } as BenchReport['figures'];
    stage.details = { rebuild_replay_s_1m: figureOf('s', 'x', [8, 8, 8], null) };
    const recorded = recordStageRun(whole, stage, ['made again']);
    expect(recorded.figures.rebuild_s_1m.median).toBe(13);
    expect(recorded.figures.gate_effects_per_s.median).toBe(110);
    expect(recorded.details.rebuild_replay_s_1m?.median).toBe(8);
    expect(recorded.generated_at).toBe(whole.generated_at);
    expect(recorded.notes).toEqual(['made again']);
    const md = renderBenchMarkdown(recorded);
    expect(md).toContain('measured again by `npm run bench -- --only rebuild --journals <dir> --record` at 2026-02-02T00:00:00.000Z, the stage alone (load average 3.5');
    expect(md).toContain('`rebuild_s_1m`, `rebuild_replay_s_1m`');
    // The same stage recorded again names only the newer run.
    const again = recordStageRun(recorded, { ...stage, generated_at: '2026-03-03T00:00:00.000Z' }, []);
    expect(again.stage_runs?.map((run) => run.generated_at)).toEqual(['2026-03-03T00:00:00.000Z']);
  });

  it('results/bench.md is exactly the rendering of results/bench.json', () => {
    const report = JSON.parse(fs.readFileSync(BENCH_JSON, 'utf8')) as BenchReport;
    expect(fs.readFileSync(BENCH_MD, 'utf8')).toBe(renderBenchMarkdown(report));
  });

  it('results/bench.json has every figure from at least 3 repetitions, judged against its target', () => {
    const report = JSON.parse(fs.readFileSync(BENCH_JSON, 'utf8')) as BenchReport;
    expect(report.command).toBe('npm run bench');
    for (const name of FIGURE_NAMES) {
      const figure = figureIn(report, name);
      expect(figure.target, name).toEqual(TARGETS[name] ?? null);
      if (figure.error !== undefined) continue;
      expect(figure.samples.length, name).toBeGreaterThanOrEqual(3);
      expect(figure, name).toEqual(figureOf(figure.unit, figure.what, figure.samples, figure.target));
      if (figure.target && figure.median !== null) expect(figure.met, name).toBe(meets(figure.median, figure.target));
    }
  });
});
