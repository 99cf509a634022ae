import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const script = join(__dirname, '..', '..', 'scripts', 'bundle', 'explorer.mjs');

/**
 * The explorer's browser files built from the current sources, as `npm run build`
 * builds them into dist/explorer/assets/, but into a folder of the test's own: a test
 * never serves a stale build, and needs no `npm run build` first. Remove it afterwards.
 */
export function buildExplorerAssets(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'wfs-explorer-assets-'));
  const built = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`scripts/bundle/explorer.mjs failed: ${built.stderr}`);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
