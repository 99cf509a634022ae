import { spawnSync } from 'node:child_process';
import { createMetrics } from '../../src/observability/metrics';
import { allocate, collectSeen, exposedGc, gcCounted } from '../helpers/gcMetrics';
import { waitFor } from '../helpers/waitFor';

/**
 * The process metrics of `/metrics` (src/observability/metrics/process.ts, `collectProcessMetrics`):
 * prom-client's defaults, every one of them, with a GC histogram whose observer a closed
 * server disconnects. prom-client's own never stops, and kept each closed server whole.
 */

const gc = exposedGc();

/** What prom-client's `collectDefaultMetrics` registers, as name, type and help: asked in a process of its own, whose GC observer ends with it. */
function promClientDefaults(): Array<{ name: string; type: string; help: string }> {
  const script = `const { Registry, collectDefaultMetrics } = require('prom-client'); const registry = new Registry(); collectDefaultMetrics({ register: registry }); registry.getMetricsAsJSON().then((all) => { process.stdout.write(JSON.stringify(all.map(({ name, type, help }) => ({ name, type, help })))); process.exit(0); });`;
  const run = spawnSync(process.execPath, ['-e', script], { cwd: `${__dirname}/../..`, encoding: 'utf8', timeout: 20_000 });
  if (run.status !== 0) throw new Error(`prom-client's defaults could not be listed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Array<{ name: string; type: string; help: string }>;
}

describe('process metrics', () => {
  it("serves every metric of prom-client's defaults, with the same type and help", async () => {
    const metrics = createMetrics();
    try {
      const ours = (await metrics.registry.getMetricsAsJSON()).map(({ name, type, help }) => ({ name, type, help }));
      const defaults = promClientDefaults();
      expect(defaults.length).toBeGreaterThan(20);
      expect(ours).toEqual(expect.arrayContaining(defaults));
    } finally {
      metrics.close();
    }
  });

  it('counts garbage collections by kind while open, and none once closed', async () => {
    const metrics = createMetrics();
    await waitFor(async () => {
      allocate();
      return (await gcCounted(metrics.registry)) > 0;
    }, 'a garbage collection counted');
    const kinds = (await metrics.registry.getSingleMetric('nodejs_gc_duration_seconds')!.get()).values.map((value) => value.labels.kind);
    expect(kinds.every((kind) => ['major', 'minor', 'incremental', 'weakcb'].includes(String(kind)))).toBe(true);
    metrics.close();
    const counted = await gcCounted(metrics.registry);
    await collectSeen(gc);
    expect(await gcCounted(metrics.registry)).toBe(counted);
  });

  /** Whether the registry of a set of metrics made and dropped here is collected, after `close()` or without it. */
  async function letGo(close: boolean): Promise<boolean> {
    const registry = ((): WeakRef<object> => {
      const metrics = createMetrics();
      if (close) metrics.close();
      return new WeakRef(metrics.registry);
    })();
    try {
      // A WeakRef's target lives at least to the end of the turn that made or read it.
      await waitFor(async () => {
        await new Promise((resolve) => setImmediate(resolve));
        gc();
        return registry.deref() === undefined;
      }, 'the registry collected', 2_000);
      return true;
    } catch {
      return false;
    }
  }

  it('lets the registry, and all its metrics reach, go once closed; without close() the GC observer keeps it', async () => {
    expect(await letGo(true)).toBe(true);
    // The difference the close makes (this one is kept for the worker's life: one registry, no server).
    expect(await letGo(false)).toBe(false);
  });
});
