import { execFileSync } from 'node:child_process';
import path from 'node:path';

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
    const figures = JSON.parse(output) as { violations: string[]; circles: string[]; upwardArrows: string[]; unplaced: string[]; floors: number };
    expect(figures.violations).toEqual([]);
    expect(figures.circles).toEqual([]);
    expect(figures.upwardArrows).toEqual([]);
    expect(figures.unplaced).toEqual([]);
  });
});
