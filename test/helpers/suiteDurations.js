/**
 * A Jest reporter (jest.config.js, `reporters`, beside 'default'): at the end of the
 * line, every suite's wall time, slowest first, with its project and when it started
 * (seconds into the run: a long suite started late is the tail of the line), and the sum of them
 * beside the run's own wall time (what the workers ran side by side). So whoever adds a
 * slow suite sees it, and sees what the line costs. Plain CommonJS: Jest loads reporters
 * itself, without the ts-jest transform.
 */
class SuiteDurations {
  constructor(globalConfig) {
    this.globalConfig = globalConfig;
  }

  onRunComplete(_testContexts, results) {
    const root = this.globalConfig.rootDir;
    const suites = results.testResults
      .map((suite) => ({
        seconds: (suite.perfStats.end - suite.perfStats.start) / 1000,
        startedAt: (suite.perfStats.start - results.startTime) / 1000,
        project: suite.displayName?.name ?? '',
        path: suite.testFilePath.startsWith(`${root}/`) ? suite.testFilePath.slice(root.length + 1) : suite.testFilePath,
        failed: suite.numFailingTests > 0 || suite.testExecError !== undefined,
        tests: suite.numPassingTests + suite.numFailingTests + suite.numPendingTests + suite.numTodoTests,
      }))
      .filter((suite) => Number.isFinite(suite.seconds) && suite.seconds >= 0)
      .sort((a, b) => b.seconds - a.seconds);
    if (suites.length === 0) return;
    const sum = suites.reduce((total, suite) => total + suite.seconds, 0);
    const wall = (Date.now() - results.startTime) / 1000;
    const projectWidth = Math.max(...suites.map((suite) => suite.project.length));
    const lines = suites.map(
      (suite) => `${suite.seconds.toFixed(1).padStart(7)} s  from ${suite.startedAt.toFixed(0).padStart(4)} s  ${suite.project.padEnd(projectWidth)}  ${suite.path} (${suite.tests})${suite.failed ? '  FAILED' : ''}`,
    );
    process.stderr.write(
      `\nSuite durations, slowest first, each with when it started (${suites.length} suites, ${sum.toFixed(1)} s together, ${wall.toFixed(1)} s of wall time on ${this.globalConfig.maxWorkers} worker${this.globalConfig.maxWorkers === 1 ? '' : 's'}):\n${lines.join('\n')}\n`,
    );
  }
}

module.exports = SuiteDurations;
