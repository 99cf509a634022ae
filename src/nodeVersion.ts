/**
 * The oldest Node.js the server runs on: the highest `engines` floor among its
 * production dependencies (undici 8 says 22.19.0), and
 * package.json's `engines`. `node dist/index.js` loads this module first, so an older
 * Node stops with one clear line instead of failing somewhere inside a dependency.
 */
export const MINIMUM_NODE_VERSION = '22.19.0';

export function isSupportedNodeVersion(version: string): boolean {
  const [major = 0, minor = 0, patch = 0] = version.replace(/^v/, '').split('.').map((part) => Number.parseInt(part, 10));
  const [minMajor = 0, minMinor = 0, minPatch = 0] = MINIMUM_NODE_VERSION.split('.').map(Number);
  if (major !== minMajor) return major > minMajor;
  if (minor !== minMinor) return minor > minMinor;
  return patch >= minPatch;
}

if (!isSupportedNodeVersion(process.versions.node)) {
  process.stderr.write(`wfs-subgraph: needs Node.js ${MINIMUM_NODE_VERSION} or later, this is ${process.version} (npm start runs the project's own Node 24)\n`);
  process.exit(1);
}
