import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * No test puts an upper bound on elapsed wall-clock time: on a loaded machine such a
 * bound fails for no fault of the code, and speed is the benchmarks' subject
 * (bench/README.md). A test waits on events, counters or an injected clock instead.
 * Where time itself is the subject (a deadline the router enforces), the line or the
 * one above says "time is the subject", and the bound stays.
 */

const testRoot = path.resolve(__dirname, '..');

function testFiles(directory = testRoot): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return testFiles(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

const CLOCK_DIFFERENCE = /\b(?:Date|performance)\.now\(\)\s*-|process\.hrtime/;
const UPPER_BOUND = /expect\((.*)\)\.(?:not\.)?toBeLessThan(?:OrEqual)?\(/;
const EXEMPT = /time is the subject/i;

/** The lines of `source` that bound elapsed wall-clock time from above, as `line: text`. */
function wallClockUpperBounds(source: string): string[] {
  const lines = source.split('\n');
  // Names that hold an elapsed time: `const elapsed = performance.now() - started`, `{ elapsedMs: Date.now() - start }`.
  const elapsedNames = new Set<string>(['elapsed', 'elapsedMs']);
  for (const match of source.matchAll(/(\w+)\s*[:=]\s*[^;\n]*?\b(?:Date|performance)\.now\(\)\s*-/g)) elapsedNames.add(match[1]!);
  const holdsElapsed = (expression: string) => CLOCK_DIFFERENCE.test(expression) || [...expression.matchAll(/\w+/g)].some(([name]) => elapsedNames.has(name));
  // ... and arrays they are collected in: `during.push(ms)`.
  for (const match of source.matchAll(/(\w+)\.push\(([^)]*)\)/g)) if (holdsElapsed(match[2]!)) elapsedNames.add(match[1]!);
  return lines.flatMap((line, index) => {
    const bounded = UPPER_BOUND.exec(line)?.[1];
    if (bounded === undefined || !holdsElapsed(bounded)) return [];
    if (EXEMPT.test(line) || EXEMPT.test(lines[index - 1] ?? '')) return [];
    return [`${index + 1}: ${line.trim()}`];
  });
}

describe('wall-clock upper bounds in tests', () => {
  it('recognises one, however the elapsed time is written', () => {
    expect(wallClockUpperBounds('expect(Date.now() - started).toBeLessThan(1_000);')).toHaveLength(1);
    expect(wallClockUpperBounds('    expect(performance.now() - started).toBeLessThanOrEqual(3_500);')).toHaveLength(1);
    expect(wallClockUpperBounds('const took = performance.now() - t0;\nexpect(took).toBeLessThan(50);')).toEqual(['2: expect(took).toBeLessThan(50);']);
    expect(wallClockUpperBounds('const t = { ms: performance.now() - s };\nfast.push(t.ms);\nexpect(median(fast)).toBeLessThan(50);')).toHaveLength(1);
    expect(wallClockUpperBounds('const r = { elapsedMs: Math.round(performance.now() - s) };\nexpect(r.elapsedMs).toBeLessThan(20_000);')).toHaveLength(1);
  });

  it('leaves alone lower bounds, other quantities, injected clocks and bounds whose subject is time', () => {
    expect(wallClockUpperBounds('expect(Date.now() - started).toBeGreaterThanOrEqual(900);')).toEqual([]);
    expect(wallClockUpperBounds('expect(calls() - before).toBeLessThanOrEqual(6);')).toEqual([]);
    expect(wallClockUpperBounds('now += 250;\nexpect(now - start).toBeLessThan(60_000);')).toEqual([]);
    expect(wallClockUpperBounds('// Time is the subject: the router gives up at 20 s.\nexpect(result.elapsedMs).toBeLessThan(20_000);')).toEqual([]);
  });

  it('finds none in test/**/*.test.ts', () => {
    // This file's own examples are strings, not tests.
    const files = testFiles().filter((file) => file !== __filename);
    expect(files.length).toBeGreaterThan(50);
    const found = files.flatMap((file) => wallClockUpperBounds(readFileSync(file, 'utf8')).map((where) => `${path.relative(testRoot, file)}:${where}`));
    expect(found).toEqual([]);
  });
});
