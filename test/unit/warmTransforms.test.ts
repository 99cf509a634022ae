import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Config } from '@jest/types';
import { readConfigs } from 'jest-config';

/**
 * The test line fills Jest's transform cache in one process before the workers start
 * (test/helpers/warmTransforms.js). That saves anything only while the workers find what
 * it wrote: under the key they compute themselves, in the folder they read.
 */
const root = path.resolve(__dirname, '..', '..');
const { warmTransforms } = require(path.join(root, 'test', 'helpers', 'warmTransforms.js')) as {
  warmTransforms(projectConfig: Config.ProjectConfig, files?: string[]): Promise<number>;
};

/** The compiled files of `basename` (without its extension) in the cache, source maps left out. */
function cached(cacheDirectory: string, basename: string): string[] {
  const stem = basename.replace(/\W/g, '');
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(path.join(dir, entry.name)) : entry.name.startsWith(`${stem}_`) && !entry.name.endsWith('.map') ? [entry.name] : []));
  return walk(cacheDirectory);
}

describe("the transform cache's warm-up", () => {
  let cacheDirectory: string;
  beforeAll(() => {
    cacheDirectory = mkdtempSync(path.join(tmpdir(), 'wfs-warm-'));
  });
  afterAll(() => rmSync(cacheDirectory, { recursive: true, force: true }));

  it('writes what a suite run afterwards reads: the suite and what it imports are compiled once, not again by the worker', async () => {
    const { configs } = await readConfigs({ $0: 'jest', _: [] } as unknown as Config.Argv, [root]);
    const unit = configs.find((config) => config.displayName?.name === 'unit')!;
    const suite = path.join(root, 'test', 'unit', 'nodeVersion.test.ts');
    const imported = path.join(root, 'src', 'nodeVersion.ts');
    expect(await warmTransforms({ ...unit, cacheDirectory }, [suite, imported])).toBe(2);
    expect([cached(cacheDirectory, 'nodeVersion.test'), cached(cacheDirectory, 'nodeVersion')].map((files) => files.length)).toEqual([1, 1]);

    // The suite in a Jest of its own, on the same cache (not itself asked to warm it).
    const { JEST_WARM_TRANSFORM_CACHE: _asked, ...env } = process.env;
    const run = spawnSync(process.execPath, [path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'), '--ci', '--cacheDirectory', cacheDirectory, '--selectProjects', 'unit', '--', suite], { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
    expect({ status: run.status, stderr: run.status === 0 ? '' : run.stderr.slice(-2000) }).toEqual({ status: 0, stderr: '' });
    // A key of its own would have left a second file beside each.
    expect([cached(cacheDirectory, 'nodeVersion.test'), cached(cacheDirectory, 'nodeVersion')].map((files) => files.length)).toEqual([1, 1]);
  });
});
