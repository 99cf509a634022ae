const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { warmTransforms } = require('./warmTransforms');

/**
 * One temporary folder per Jest run (jest.config.js, `globalSetup` and `globalTeardown`):
 * before any worker starts, TMPDIR points into a fresh folder, so every `mkdtemp` of the
 * suites (tenants files, copies of the repository, Redis folders, Chromium profiles) and
 * of the processes they start lands there; at the end of the run the folder is removed,
 * whatever the results. Jest's own cache stays where it was (it is resolved before this).
 * The folder's name travels in JEST_RUN_TMPDIR, not under a `WFS_` name: every process the
 * suites start inherits it, and the server refuses an unknown `WFS_*` setting.
 *
 * With JEST_WARM_TRANSFORM_CACHE=1 (the test line, scripts/test.sh), it then fills Jest's
 * transform cache in this one process (warmTransforms.js).
 */
async function setup(_globalConfig, projectConfig) {
  const dir = mkdtempSync(join(tmpdir(), 'wfs-jest-'));
  process.env.JEST_RUN_TMPDIR = dir;
  process.env.TMPDIR = dir;
  // The test line's whole run: the transform cache filled in one process first (warmTransforms.js says why).
  if (process.env.JEST_WARM_TRANSFORM_CACHE === '1') await warmTransforms(projectConfig);
}

async function teardown() {
  const dir = process.env.JEST_RUN_TMPDIR;
  if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

module.exports = setup;
module.exports.teardown = teardown;
