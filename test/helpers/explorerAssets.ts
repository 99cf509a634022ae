import { execFile } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from './waitFor';

const root = join(__dirname, '..', '..');
const script = join(root, 'scripts', 'bundle', 'explorer.mjs');
/** Where `npm run build` puts the explorer's files (src/explorer/assets.ts DEFAULT_ASSETS_DIR). */
const ASSETS_DIR = join(root, 'dist', 'explorer', 'assets');
/** Held by the one suite building ASSETS_DIR; holds its pid. */
const LOCK = `${ASSETS_DIR}.lock`;
/** A build takes 5 s on a quiet 2-core machine; room for a loaded one. */
const BUILD_TIMEOUT_MS = 120_000;
/** How long `explorerAssets()` may take at worst (another suite's build, then ours): a `beforeAll` timeout. */
export const EXPLORER_ASSETS_TIMEOUT_MS = 2 * BUILD_TIMEOUT_MS + 10_000;

const execFileAsync = promisify(execFile);
let ready: Promise<string> | undefined;

/**
 * The explorer's browser files, as a folder for `explorerAssetsDir`/`assetsDir`: the
 * ones `npm run build` left in dist/explorer/assets/ while they are still built from
 * the current sources (the hashes of sources.json match, scripts/bundle/explorer.mjs),
 * so the test line builds them once. Missing or stale (no build yet, a source edited
 * since), they are built there first, by one suite at a time: the others wait on a lock
 * file, then find them fresh. A test never serves a stale build.
 */
export function explorerAssets(): Promise<string> {
  ready ??= (async () => {
    if (isFresh()) return ASSETS_DIR;
    await holdingLock(async () => {
      if (!isFresh()) await execFileAsync(process.execPath, [script, ASSETS_DIR], { timeout: BUILD_TIMEOUT_MS });
    });
    if (!isFresh()) throw new Error(`${ASSETS_DIR} is still not built from the current sources after scripts/bundle/explorer.mjs`);
    return ASSETS_DIR;
  })();
  return ready;
}

/** Whether ASSETS_DIR is complete and every source it was built from is unchanged (scripts/bundle/assetSources.cjs, as the build reads it). */
const { builtFromCurrentSources } = require('../../scripts/bundle/assetSources.cjs') as { builtFromCurrentSources: (dir: string, root: string) => boolean };
const isFresh = (): boolean => builtFromCurrentSources(ASSETS_DIR, root);

/**
 * Runs `work` holding LOCK. The lock is a hard link to a file already holding our pid,
 * so it never exists without one; a lock whose process is gone is taken over.
 */
async function holdingLock(work: () => Promise<void>): Promise<void> {
  mkdirSync(dirname(LOCK), { recursive: true });
  const mine = `${LOCK}.${process.pid}`;
  writeFileSync(mine, String(process.pid));
  try {
    for (;;) {
      try {
        linkSync(mine, LOCK);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        if (holderAlive()) await waitFor(() => !existsSync(LOCK) || !holderAlive(), 'another suite to build the explorer assets', BUILD_TIMEOUT_MS);
        else rmSync(LOCK, { force: true });
        continue;
      }
      try {
        await work();
      } finally {
        rmSync(LOCK, { force: true });
      }
      return;
    }
  } finally {
    rmSync(mine, { force: true });
  }
}

function holderAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(LOCK, 'utf8'));
  } catch {
    return false; // released meanwhile
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
