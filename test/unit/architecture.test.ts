import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
const { missingNames } = require('../../scripts/namedPaths.cjs') as { missingNames: (patterns: string[], files: string[]) => string[] };

/**
 * The layering of src/ (.dependency-cruiser.cjs), checked by `npm run architecture`
 * with dependency-cruiser: no import circle, the REST side and the GraphQL side report
 * through the Observer port (upstream/observer.ts) and import no observability adapter,
 * the GraphQL side reads through upstream/reading's TenantReader alone, nothing imports
 * the wiring from below, and src/ (the product) imports nothing of tools/, bench/ or
 * test/ but the demo's emulator.
 */
describe('architecture', () => {
  const root = path.join(__dirname, '..', '..');

  it('breaks no layering rule: no circle, no arrow running back up', () => {
    // The figures as JSON; the script exits 1 on a broken rule, which execFileSync turns into a throw with its output.
    const output = execFileSync(process.execPath, [path.join(root, 'scripts', 'architecture.mjs'), '--json'], { cwd: root, encoding: 'utf8' });
    const figures = JSON.parse(output) as { violations: string[]; circles: string[]; upwardArrows: string[]; unplaced: string[]; missing: string[]; floors: number };
    expect(figures.violations).toEqual([]);
    expect(figures.circles).toEqual([]);
    expect(figures.upwardArrows).toEqual([]);
    expect(figures.unplaced).toEqual([]);
    // Every file and folder the rules name exists: a rule about a file that is gone checks nothing.
    expect(figures.missing).toEqual([]);
  });

  it('keeps src/ from importing tools/, bench/ and test/, but for the demo reaching the emulator by its front door', () => {
    // A small tree of its own: the real one breaks no rule (above), so this shows the rule can fail.
    const tree = mkdtempSync(path.join(tmpdir(), 'wfs-architecture-'));
    const files: Record<string, string> = {
      'tsconfig.json': '{ "compilerOptions": { "module": "node20", "moduleResolution": "node16" } }\n',
      'tools/emulator/index.ts': 'export const emulator = 1;\n',
      'tools/emulator/seed.ts': 'export const seed = 1;\n',
      'tools/probes/soak.ts': 'export const soak = 1;\n',
      'bench/settings.ts': 'export const settings = 1;\n',
      'test/helpers/fixtures.ts': 'export const fixtures = 1;\n',
      'src/config.ts': "import { emulator } from '../tools/emulator';\nexport const config = emulator;\n",
      'src/server.ts': "import { settings } from '../bench/settings';\nexport const server = settings;\n",
      'src/app.ts': "import { fixtures } from '../test/helpers/fixtures';\nexport const app = fixtures;\n",
      'src/demo.ts': "import { emulator } from '../tools/emulator';\nimport { seed } from '../tools/emulator/seed';\nexport const demo = emulator + seed;\n",
    };
    try {
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(tree, file)), { recursive: true });
        writeFileSync(path.join(tree, file), text);
      }
      const run = spawnSync(process.execPath, [path.join(root, 'scripts', 'architecture.mjs'), '--json', '--root', tree], { cwd: root, encoding: 'utf8' });
      expect(run.status).toBe(1);
      const figures = JSON.parse(run.stdout) as { violations: string[] };
      expect([...figures.violations].sort()).toEqual([
        'demo-reaches-the-emulator-by-one-door: src/demo.ts -> tools/emulator/seed.ts',
        'src-is-the-product: src/app.ts -> test/helpers/fixtures.ts',
        'src-is-the-product: src/config.ts -> tools/emulator/index.ts',
        'src-is-the-product: src/server.ts -> bench/settings.ts',
      ]);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it('flags a file or folder the rules name that does not exist', () => {
    const files = ['src/config.ts', 'src/app.ts', 'src/upstream/client.ts', 'src/upstream/reading/tenantReader.ts'];
    expect(missingNames(['^src/(config|logger)\\.ts$'], files)).toEqual(['^src/logger\\.ts$']);
    expect(missingNames(['^src/(upstream|telemetry)/|^src/metrics\\.ts$'], files)).toEqual(['^src/telemetry/', '^src/metrics\\.ts$']);
    // What a negative lookahead exempts is named too.
    expect(missingNames(['^src/upstream/reading/(?!tenantReader\\.ts$)'], files)).toEqual([]);
    expect(missingNames(['^src/upstream/reading/(?!pageCache\\.ts$)'], files)).toEqual(['^src/upstream/reading/pageCache\\.ts$']);
    expect(missingNames(['^src/(?!(app|demo)\\.ts$)'], files)).toEqual(['^src/demo\\.ts$']);
  });
});
