import { useLint } from '../helpers/lintRules';

/**
 * No test waits a fixed time for something to have happened: on a loaded machine the
 * thing may not have happened yet, and on a quiet one the wait is time lost. A test waits
 * on the condition instead (test/helpers/waitFor.ts). Where the wait itself is the subject
 * (a block that lasts its length, intervals over which nothing may happen), the line or
 * one of the two above it says "time is the subject". Timers that bound a wait (an abort,
 * a kill after a grace) are not waits, and waitFor's own polling step is the mechanism.
 * The ESLint rule `wfs/no-fixed-sleep` (eslint-rules/testTiming.cjs) says so, in
 * `npm run lint`; this tests the rule.
 */

const RULE = 'wfs/no-fixed-sleep';
const lint = useLint();
const fixedWaits = (source: string) => lint.snippet(RULE, source);

describe('fixed sleeps in tests', () => {
  it('recognises one, however the wait is written', async () => {
    expect(await fixedWaits('await new Promise((resolve) => setTimeout(resolve, 100));')).toHaveLength(1);
    expect(await fixedWaits('    await sleep(2_100);')).toHaveLength(1);
    expect(await fixedWaits('await new Promise((r) => setTimeout(r, 50));')).toHaveLength(1);
    expect(await fixedWaits('await new Promise<void>((wake) => setTimeout(wake, 1e3));')).toHaveLength(1);
    expect(await fixedWaits('await new Promise<void>((resolve) => setTimeout(() => resolve(), 2 * 1000));')).toHaveLength(1);
    expect(await fixedWaits("import { setTimeout as delay } from 'node:timers/promises';\nawait delay(250);")).toEqual([`2: ${RULE}`]);
  });

  it('leaves alone waits on a condition, time limits, injected durations and waits whose subject is time', async () => {
    expect(await fixedWaits("await waitFor(() => counters.tokenRequests >= 1, 'a request under way');")).toEqual([]);
    expect(await fixedWaits('const timer = setTimeout(() => controller.abort(), 45_000);')).toEqual([]);
    expect(await fixedWaits('setTimeout(() => res.end(body), answerDelayMs);')).toEqual([]);
    expect(await fixedWaits('socket.setTimeout(500, () => done(false));')).toEqual([]);
    expect(await fixedWaits('await sleep(ms);')).toEqual([]);
    expect(await fixedWaits('// Time is the subject: the block lasts 2 s.\nawait new Promise((resolve) => setTimeout(resolve, 2_100));')).toEqual([]);
    expect(await fixedWaits('// Time is the subject: nothing happens over these intervals.\n// (five of them)\nawait sleep(100);')).toEqual([]);
    // Three lines above is too far: the comment is about something else.
    expect(await fixedWaits('// Time is the subject: the block lasts 2 s.\n\n\nawait sleep(100);')).toEqual([`4: ${RULE}`]);
  });

  it('finds none in test/', async () => {
    const { read, linted, found } = await lint.tree(RULE, [/\b(?:sleep|setTimeout)\b/]);
    expect(read).toBeGreaterThan(50);
    // The helpers and suites that time things on purpose (fixtures' sleep, liveFlood's block).
    expect(linted).toBeGreaterThanOrEqual(10);
    expect(found).toEqual([]);
  });

  it('is part of npm run lint', async () => {
    const sleepy = "import { sleep } from '../helpers/fixtures';\nexport async function settle(): Promise<void> {\n  await sleep(50);\n}\n";
    expect((await lint.asConfigured(sleepy, 'test/helpers/settle.ts')).map((message) => message.ruleId)).toEqual([RULE]);
  });
});
