const Sequencer = require('@jest/test-sequencer').default;

/**
 * Jest's order (jest.config.js, `testSequencer`), but for a suite it has no time of yet
 * (a fresh clone, CI): the end-to-end projects first, then the rest, each by file size,
 * instead of by file size alone. The e2e suites are the long ones (a build in a copy of
 * the repository, gateways, Chromium); started last, one of them would run alone at the
 * end while the other workers idle. Integration and unit suites are not ranked apart: the
 * long unit suites (frontend.test.ts compiles TypeScript projects, cursorCompatibility
 * and cost check thousands of cases) then start among the integration suites of their
 * size instead of at the end of the line, where they were its tail (measured on
 * 26 November 2026: frontend.test.ts started 108 s into a 130 s run). Once Jest has times
 * (its cache), it orders by them, slowest first, as it always does.
 */
const RANK = (project) => (project.startsWith('e2e') ? 0 : 1);

class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.some((test) => test.duration != null)) return sorted;
    const rank = (test) => RANK(test.context.config.displayName?.name ?? '');
    // Array.prototype.sort is stable: within a rank, Jest's order (by size) stays.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = SlowFirstSequencer;
