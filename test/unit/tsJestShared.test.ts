import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The shared ts-jest transform (test/helpers/tsJestShared.js) keys its cache on each
 * file's path and text and the settings: right only while `isolatedModules` is on. It
 * refuses settings without it.
 */
const root = path.resolve(__dirname, '..', '..');
const shared = require(path.join(root, 'test', 'helpers', 'tsJestShared.js')) as {
  createTransformer(options?: Record<string, unknown>): unknown;
};

describe('the shared ts-jest transform', () => {
  let folder: string;
  beforeAll(() => {
    folder = mkdtempSync(path.join(tmpdir(), 'ts-jest-shared-'));
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('starts with the project’s settings (tsconfig.test.json, as jest.config.js gives it)', () => {
    expect(shared.createTransformer({ tsconfig: '<rootDir>/tsconfig.test.json' })).toEqual(expect.objectContaining({ process: expect.any(Function), getCacheKey: expect.any(Function) }));
  });

  it('refuses a tsconfig that turns isolatedModules off, or leaves it out', () => {
    const off = path.join(folder, 'off.json');
    writeFileSync(off, JSON.stringify({ extends: path.join(root, 'tsconfig.test.json'), compilerOptions: { isolatedModules: false } }));
    expect(() => shared.createTransformer({ tsconfig: off })).toThrow(/must set "isolatedModules": true/);
    // tsconfig.json alone (without tsconfig.test.json's isolatedModules).
    expect(() => shared.createTransformer({ tsconfig: path.join(root, 'tsconfig.json') })).toThrow(/must set "isolatedModules": true/);
    expect(() => shared.createTransformer({ tsconfig: { compilerOptions: {} } })).toThrow(/inline tsconfig must set/);
  });

  it('follows extends: a tsconfig that inherits isolatedModules is taken', () => {
    const inherits = path.join(folder, 'inherits.json');
    writeFileSync(inherits, JSON.stringify({ extends: path.join(root, 'tsconfig.test.json'), compilerOptions: { sourceMap: true } }));
    expect(() => shared.createTransformer({ tsconfig: inherits })).not.toThrow();
  });
});
