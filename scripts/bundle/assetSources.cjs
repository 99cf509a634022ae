// The sources the explorer's assets were built from (sources.json, which
// scripts/bundle/explorer.mjs writes last beside them): the build reads it to reuse the
// assets it kept in node_modules/.cache, and the tests (test/helpers/explorerAssets.ts)
// to use the ones `npm run build` left in dist/.
const { createHash } = require('node:crypto');
const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

/** The hex SHA-256 of the file at `path` (from `root`), or null when there is none. */
function sourceHash(root, path) {
  const file = join(root, path);
  return existsSync(file) ? createHash('sha256').update(readFileSync(file)).digest('hex') : null;
}

/**
 * Whether `dir` holds assets complete (sources.json is written last) and built from
 * `root`'s files as they are now: every source it lists, scripts/bundle/explorer.mjs
 * among them, hashes the same (a missing file as null).
 */
function builtFromCurrentSources(dir, root) {
  let sources;
  try {
    sources = JSON.parse(readFileSync(join(dir, 'sources.json'), 'utf8'));
  } catch {
    return false;
  }
  const entries = Object.entries(sources);
  return entries.some(([path]) => path === 'scripts/bundle/explorer.mjs') && entries.every(([path, hash]) => hash === sourceHash(root, path));
}

module.exports = { sourceHash, builtFromCurrentSources };
