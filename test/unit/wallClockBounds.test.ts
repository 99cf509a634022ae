import { useLint } from '../helpers/lintRules';

/**
 * No test puts an upper bound on elapsed wall-clock time: on a loaded machine such a
 * bound fails for no fault of the code, and speed is the benchmarks' subject
 * (bench/README.md). A test waits on events, counters or an injected clock instead.
 * Where time itself is the subject (a deadline the router enforces), the line or the
 * one above says "time is the subject", and the bound stays. The ESLint rule
 * `wfs/no-wall-clock-upper-bound` (eslint-rules/testTiming.cjs) says so, in
 * `npm run lint`; this tests the rule.
 */

const RULE = 'wfs/no-wall-clock-upper-bound';
const lint = useLint();
const wallClockUpperBounds = (source: string) => lint.snippet(RULE, source);

describe('wall-clock upper bounds in tests', () => {
  it('recognises one, however the elapsed time is written', async () => {
    expect(await wallClockUpperBounds('expect(Date.now() - started).toBeLessThan(1_000);')).toHaveLength(1);
    expect(await wallClockUpperBounds('    expect(performance.now() - started).toBeLessThanOrEqual(3_500);')).toHaveLength(1);
    expect(await wallClockUpperBounds('const took = performance.now() - t0;\nexpect(took).toBeLessThan(50);')).toEqual([`2: ${RULE}`]);
    expect(await wallClockUpperBounds('const t = { ms: performance.now() - s };\nfast.push(t.ms);\nexpect(median(fast)).toBeLessThan(50);')).toHaveLength(1);
    expect(await wallClockUpperBounds('const r = { elapsedMs: Math.round(performance.now() - s) };\nexpect(r.elapsedMs).toBeLessThan(20_000);')).toHaveLength(1);
    expect(await wallClockUpperBounds('const [s] = process.hrtime(start);\nexpect(s).toBeLessThan(2);\nexpect(process.hrtime.bigint() - t0).toBeLessThan(10n);')).toHaveLength(1);
    expect(await wallClockUpperBounds('expect(elapsed).not.toBeGreaterThan(900);')).toHaveLength(1);
    // A name defined after the bound is still a name of the file.
    expect(await wallClockUpperBounds('function check() {\n  expect(took).toBeLessThan(50);\n}\nlet took = 0;\ntook = Date.now() - t0;')).toEqual([`2: ${RULE}`]);
  });

  it('leaves alone lower bounds, other quantities, injected clocks and bounds whose subject is time', async () => {
    expect(await wallClockUpperBounds('expect(Date.now() - started).toBeGreaterThanOrEqual(900);')).toEqual([]);
    expect(await wallClockUpperBounds('expect(elapsed).not.toBeLessThan(900);')).toEqual([]);
    expect(await wallClockUpperBounds('expect(calls() - before).toBeLessThanOrEqual(6);')).toEqual([]);
    expect(await wallClockUpperBounds('now += 250;\nexpect(now - start).toBeLessThan(60_000);')).toEqual([]);
    expect(await wallClockUpperBounds('// Time is the subject: the router gives up at 20 s.\nexpect(result.elapsedMs).toBeLessThan(20_000);')).toEqual([]);
  });

  it('finds none in test/**/*.test.ts', async () => {
    // A bound needs a matcher, and an elapsed time needs a clock reading or an `elapsed` name.
    const { read, linted, found } = await lint.tree(RULE, [/\btoBe(?:Less|Greater)Than/, /\bnow\b|\bhrtime\b|elapsed/]);
    expect(read).toBeGreaterThan(50);
    // The suites that read the clock (upstreamFaults, foreignUpstream, liveMatching and others).
    expect(linted).toBeGreaterThanOrEqual(5);
    expect(found).toEqual([]);
  });

  it('is part of npm run lint for test files', async () => {
    const hasty = "it('is quick', () => {\n  const started = Date.now();\n  expect(Date.now() - started).toBeLessThan(100);\n});\n";
    expect((await lint.asConfigured(hasty, 'test/unit/hasty.test.ts')).map((message) => message.ruleId)).toEqual([RULE]);
  });
});
