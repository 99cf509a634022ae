import { execFileSync } from 'node:child_process';
import path from 'node:path';
const { missingNames } = require('../../scripts/namedPaths.cjs') as { missingNames: (patterns: string[], files: string[]) => string[] };

/**
 * The layering of src/ (.dependency-cruiser.cjs), checked by `npm run architecture`
 * with dependency-cruiser: no import circle, the REST side and the GraphQL side report
 * through the Observer port (upstream/observer.ts) and import no observability adapter,
 * the GraphQL side reads through upstream/reading's TenantReader alone, nothing imports
 * the wiring from below.
 */
describe('architecture', () => {
  it('breaks no layering rule: no circle, no arrow running back up', () => {
    const root = path.join(__dirname, '..', '..');
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
