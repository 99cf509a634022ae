import { runMemoryProbe } from '../../tools/probes/memoryProbe';

/**
 * `npm run probe:memory` end to end, small: the built server (`dist/index.js`, so
 * `npm run build` first) against the emulator with 3 generated companies, each browsed
 * twice within a 10 s freshness window, then idle for 2 s. The figures themselves are for
 * sizing runs (docs/operations.md, "Memory per company"); here the probe must run, read
 * them, count no error, and its second reads must have been served from memory: answered
 * whole (each is the same request as the first read), or from kept pages.
 */
it('browses every company twice, reads the memory of the server at each moment, and reports no error', async () => {
  const report = await runMemoryProbe({ companies: 3, locations: 150, shifts: 400, concurrency: 2, reads: 2, freshnessSeconds: 10, idleSeconds: 2, maxMinutes: 2 });
  expect(report.errors).toBe(0);
  expect(report.failures).toEqual([]);
  // A warm-up, then per company and read: 2 pages of locations, 3 of shifts, a filtered page, one _entities.
  expect(report.queries).toBe(1 + 3 * 2 * 7);
  expect(report.wholeAnswers.hits + report.keptPages.hits).toBeGreaterThan(0);
  for (const reading of [report.before, report.peak, report.afterBrowse, report.afterIdle]) {
    expect(reading.rssMiB).toBeGreaterThan(0);
    expect(reading.heapUsedMiB).toBeGreaterThan(0);
  }
  expect(report.peak.rssMiB).toBeGreaterThanOrEqual(report.afterBrowse.rssMiB);
}, 120_000);
