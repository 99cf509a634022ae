import { readFileSync } from 'node:fs';
import path from 'node:path';
import { useLint } from '../helpers/lintRules';

/**
 * What `npm run lint` enforces, run as it runs it (ESLint's API with eslint.config.mjs
 * loaded as the CLI loads it), in one child process for this suite
 * (test/helpers/lintRules.ts): the three checks below share it, as one child costs
 * about 2 CPU-seconds to load ESLint, typescript-eslint and @graphql-eslint.
 *
 * - **Schema descriptions:** every type, field, argument, enum value and directive of
 *   our schema and of the client-facing API schema has a description (@graphql-eslint's
 *   `require-description`), and the folders of TypeScript `npm run lint` names are each
 *   linted with the recommended rules.
 * - **No fixed sleeps in tests:** no test waits a fixed time for something to have
 *   happened: on a loaded machine the thing may not have happened yet, and on a quiet one
 *   the wait is time lost. A test waits on the condition instead (test/helpers/waitFor.ts).
 *   Where the wait itself is the subject (a block that lasts its length, intervals over
 *   which nothing may happen), the line or one of the two above it says "time is the
 *   subject". Timers that bound a wait (an abort, a kill after a grace) are not waits,
 *   and waitFor's own polling step is the mechanism (`wfs/no-fixed-sleep`).
 * - **No wall-clock upper bounds in tests:** on a loaded machine such a bound fails for no
 *   fault of the code, and speed is the benchmarks' subject (bench/README.md). A test
 *   waits on events, counters or an injected clock instead. Where time itself is the
 *   subject (a deadline the router enforces), the line or the one above says "time is the
 *   subject", and the bound stays (`wfs/no-wall-clock-upper-bound`).
 *
 * Both timing rules are in eslint-rules/testTiming.cjs.
 */

const lint = useLint();
const SLEEP_RULE = 'wfs/no-fixed-sleep';
const BOUND_RULE = 'wfs/no-wall-clock-upper-bound';

describe('schema descriptions (@graphql-eslint require-description)', () => {
  it.each(['schema.graphql', 'supergraph.api.graphql'])('%s has no undocumented type, field or argument', async (file) => {
    const [result] = await lint.files([file]);
    expect(result?.messages.map((message) => `${message.line}: ${message.message}`)).toEqual([]);
    expect({ errors: result?.errorCount, warnings: result?.warningCount }).toEqual({ errors: 0, warnings: 0 });
  });

  it('reports a type, a field and an argument without a description', async () => {
    const undocumented = [
      '"Documented."',
      'type Query {',
      '  "Documented."',
      '  thing(id: ID!): Thing',
      '}',
      'type Thing {',
      '  id: ID!',
      '}',
    ].join('\n');
    const messages = await lint.asConfigured(undocumented, 'schema.graphql');
    expect(messages.map((message) => message.ruleId)).toEqual([
      '@graphql-eslint/require-description',
      '@graphql-eslint/require-description',
      '@graphql-eslint/require-description',
    ]);
    expect(messages.map((message) => message.message)).toEqual([
      expect.stringContaining('"id" in field "thing"'),
      expect.stringContaining('type "Thing"'),
      expect.stringContaining('field "id" in type "Thing"'),
    ]);
  });
});

describe("npm run lint's reach", () => {
  const command = (JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { scripts: { lint: string } }).scripts.lint;

  // router/ holds TypeScript the gateways load (Hive Gateway's config and response-cache
  // plugin): type-checked with the rest, so linted with the rest.
  it.each(['src', 'tools', 'test', 'scripts', 'bench', 'router'])('lints the TypeScript of %s/ with the recommended rules', async (folder) => {
    expect(command.split(' ')).toContain(folder);
    const messages = await lint.asConfigured('const unused = 1;\n', `${folder}/reach.ts`);
    expect(messages.map((message) => message.ruleId)).toEqual(['@typescript-eslint/no-unused-vars']);
  });

  it('finds nothing in router/', async () => {
    const results = await lint.files(['router']);
    expect(results.map((result) => result.filePath).sort()).toEqual(['router/answerTags.ts', 'router/gateway.config.ts', 'router/hiveResponseCache.ts', 'router/responseStore.ts']);
    expect(results.flatMap((result) => result.messages.map((message) => `${result.filePath}:${message.line}: ${message.message}`))).toEqual([]);
  });
});

const fixedWaits = (source: string) => lint.snippet(SLEEP_RULE, source);

describe('fixed sleeps in tests', () => {
  it('recognises one, however the wait is written', async () => {
    expect(await fixedWaits('await new Promise((resolve) => setTimeout(resolve, 100));')).toHaveLength(1);
    expect(await fixedWaits('    await sleep(2_100);')).toHaveLength(1);
    expect(await fixedWaits('await new Promise((r) => setTimeout(r, 50));')).toHaveLength(1);
    expect(await fixedWaits('await new Promise<void>((wake) => setTimeout(wake, 1e3));')).toHaveLength(1);
    expect(await fixedWaits('await new Promise<void>((resolve) => setTimeout(() => resolve(), 2 * 1000));')).toHaveLength(1);
    expect(await fixedWaits("import { setTimeout as delay } from 'node:timers/promises';\nawait delay(250);")).toEqual([`2: ${SLEEP_RULE}`]);
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
    expect(await fixedWaits('// Time is the subject: the block lasts 2 s.\n\n\nawait sleep(100);')).toEqual([`4: ${SLEEP_RULE}`]);
  });

  it('finds none in test/', async () => {
    const { read, linted, found } = await lint.tree(SLEEP_RULE, [/\b(?:sleep|setTimeout)\b/]);
    expect(read).toBeGreaterThan(50);
    // The helpers and suites that time things on purpose (fixtures' sleep, liveFlood's block).
    expect(linted).toBeGreaterThanOrEqual(10);
    expect(found).toEqual([]);
  });

  it('is part of npm run lint', async () => {
    const sleepy = "import { sleep } from '../helpers/fixtures';\nexport async function settle(): Promise<void> {\n  await sleep(50);\n}\n";
    expect((await lint.asConfigured(sleepy, 'test/helpers/settle.ts')).map((message) => message.ruleId)).toEqual([SLEEP_RULE]);
  });
});

const wallClockUpperBounds = (source: string) => lint.snippet(BOUND_RULE, source);

describe('wall-clock upper bounds in tests', () => {
  it('recognises one, however the elapsed time is written', async () => {
    expect(await wallClockUpperBounds('expect(Date.now() - started).toBeLessThan(1_000);')).toHaveLength(1);
    expect(await wallClockUpperBounds('    expect(performance.now() - started).toBeLessThanOrEqual(3_500);')).toHaveLength(1);
    expect(await wallClockUpperBounds('const took = performance.now() - t0;\nexpect(took).toBeLessThan(50);')).toEqual([`2: ${BOUND_RULE}`]);
    expect(await wallClockUpperBounds('const t = { ms: performance.now() - s };\nfast.push(t.ms);\nexpect(median(fast)).toBeLessThan(50);')).toHaveLength(1);
    expect(await wallClockUpperBounds('const r = { elapsedMs: Math.round(performance.now() - s) };\nexpect(r.elapsedMs).toBeLessThan(20_000);')).toHaveLength(1);
    expect(await wallClockUpperBounds('const [s] = process.hrtime(start);\nexpect(s).toBeLessThan(2);\nexpect(process.hrtime.bigint() - t0).toBeLessThan(10n);')).toHaveLength(1);
    expect(await wallClockUpperBounds('expect(elapsed).not.toBeGreaterThan(900);')).toHaveLength(1);
    // A name defined after the bound is still a name of the file.
    expect(await wallClockUpperBounds('function check() {\n  expect(took).toBeLessThan(50);\n}\nlet took = 0;\ntook = Date.now() - t0;')).toEqual([`2: ${BOUND_RULE}`]);
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
    const { read, linted, found } = await lint.tree(BOUND_RULE, [/\btoBe(?:Less|Greater)Than/, /\bnow\b|\bhrtime\b|elapsed/]);
    expect(read).toBeGreaterThan(50);
    // The suites that read the clock (upstreamFaults, foreignUpstream, liveMatching and others).
    expect(linted).toBeGreaterThanOrEqual(5);
    expect(found).toEqual([]);
  });

  it('is part of npm run lint for test files', async () => {
    const hasty = "it('is quick', () => {\n  const started = Date.now();\n  expect(Date.now() - started).toBeLessThan(100);\n});\n";
    expect((await lint.asConfigured(hasty, 'test/unit/hasty.test.ts')).map((message) => message.ruleId)).toEqual([BOUND_RULE]);
  });
});
