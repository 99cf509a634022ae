import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * No test waits a fixed time for something to have happened: on a loaded machine the
 * thing may not have happened yet, and on a quiet one the wait is time lost. A test waits
 * on the condition instead (test/helpers/waitFor.ts). Where the wait itself is the subject
 * (a block that lasts its length, intervals over which nothing may happen), the line or
 * one of the two above it says "time is the subject". Timers that bound a wait (an abort,
 * a kill after a grace) are not waits, and waitFor's own polling step is the mechanism.
 */

const testRoot = path.resolve(__dirname, '..');
const MECHANISM = path.join(testRoot, 'helpers', 'waitFor.ts');

function sources(directory = testRoot): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** A wait of a literal duration: `await sleep(50)`, `setTimeout(resolve, 2_100)`, `setTimeout(r, 1e3)`. */
const FIXED_WAIT = /\bsleep\(\s*[\d_.e]+\s*\)|\bsetTimeout\(\s*(?:resolve|r|done|res)\s*,\s*[\d_.e]+\s*\)/;
const EXEMPT = /time is the subject/i;

/** The lines of `source` that wait a literal duration without saying time is their subject, as `line: text`. */
function fixedWaits(source: string): string[] {
  const lines = source.split('\n');
  return lines.flatMap((line, index) => {
    if (!FIXED_WAIT.test(line)) return [];
    if ([line, lines[index - 1] ?? '', lines[index - 2] ?? ''].some((near) => EXEMPT.test(near))) return [];
    return [`${index + 1}: ${line.trim()}`];
  });
}

describe('fixed sleeps in tests', () => {
  it('recognises one, however the wait is written', () => {
    expect(fixedWaits('await new Promise((resolve) => setTimeout(resolve, 100));')).toHaveLength(1);
    expect(fixedWaits('    await sleep(2_100);')).toHaveLength(1);
    expect(fixedWaits('await new Promise((r) => setTimeout(r, 50));')).toHaveLength(1);
  });

  it('leaves alone waits on a condition, time limits, injected durations and waits whose subject is time', () => {
    expect(fixedWaits("await waitFor(() => counters.tokenRequests >= 1, 'a request under way');")).toEqual([]);
    expect(fixedWaits('const timer = setTimeout(() => controller.abort(), 45_000);')).toEqual([]);
    expect(fixedWaits('setTimeout(() => res.end(body), answerDelayMs);')).toEqual([]);
    expect(fixedWaits('await sleep(ms);')).toEqual([]);
    expect(fixedWaits('// Time is the subject: the block lasts 2 s.\nawait new Promise((resolve) => setTimeout(resolve, 2_100));')).toEqual([]);
  });

  it('finds none in test/', () => {
    // This file's own examples are strings, not waits.
    const files = sources().filter((file) => file !== __filename && file !== MECHANISM);
    expect(files.length).toBeGreaterThan(50);
    const found = files.flatMap((file) => fixedWaits(readFileSync(file, 'utf8')).map((where) => `${path.relative(testRoot, file)}:${where}`));
    expect(found).toEqual([]);
  });
});
