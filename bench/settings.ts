import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Everything a run can be tuned with, read once from BENCH_* variables. */
export interface BenchSettings {
  /** Delay, in ms, the emulator adds to every upstream response (a simulated network hop). */
  readonly latencyMs: number;
  /** In-flight requests the load generator keeps up. */
  readonly concurrency: number;
  /** A measured run stops after this many requests... */
  readonly maxRequests: number;
  /** ...or after this many ms, whichever comes first. */
  readonly maxDurationMs: number;
  /** Requests sent (and thrown away) before each measured run. */
  readonly warmupRequests: number;
  /** Companies in the emulator; the load is spread over them. */
  readonly tenants: number;
  readonly locationsPerTenant: number;
  readonly shiftsPerTenant: number;
  /** Scenario names to run (all when unset). */
  readonly scenarios: readonly string[] | null;
  /** Target names to run (all when unset). */
  readonly targets: readonly string[] | null;
  /** Write V8 CPU profiles of the server processes to dist/bench/profiles/. */
  readonly cpuProfile: boolean;
  /** The subgraph's entry point (default dist/index.js), e.g. another build to compare. */
  readonly subgraphEntry: string | null;
  /**
   * Today's build, measured beside the subgraph as the targets `today` and `today-f5`
   * (BENCH_BASELINE_DIST: a build's `dist/` folder or its entry file); null: not measured.
   */
  readonly baselineEntry: string | null;
  /** Cold starts measured per server (spawn to first correct answer). */
  readonly coldStarts: number;
  /** Seconds of the heap run (mixed load on a fresh subgraph with --trace-gc); 0: off. */
  readonly heapSeconds: number;
  /** NODE_OPTIONS every server runs with: by default the Dockerfile's runtime flags. */
  readonly nodeOptions: string | null;
}

/** The runtime flags the Dockerfile (and `npm start`) give the subgraph. */
export const DEPLOYED_NODE_OPTIONS = '--max-semi-space-size=8 --max-old-space-size=256';

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name}: must be an integer from ${min} to ${max}, got "${text}"`);
  }
  return value;
}

function list(env: NodeJS.ProcessEnv, name: string): string[] | null {
  const text = env[name]?.trim();
  return text ? text.split(',').map((s) => s.trim()).filter(Boolean) : null;
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): BenchSettings {
  return Object.freeze({
    latencyMs: integer(env, 'BENCH_LATENCY_MS', 20, 0, 1000),
    concurrency: integer(env, 'BENCH_CONCURRENCY', 50, 1, 1024),
    maxRequests: integer(env, 'BENCH_REQUESTS', 5000, 1, 1_000_000),
    maxDurationMs: integer(env, 'BENCH_DURATION_S', 5, 1, 600) * 1000,
    warmupRequests: integer(env, 'BENCH_WARMUP', 300, 0, 100_000),
    tenants: integer(env, 'BENCH_TENANTS', 20, 2, 100),
    locationsPerTenant: integer(env, 'BENCH_LOCATIONS', 200, 20, 100_000),
    shiftsPerTenant: integer(env, 'BENCH_SHIFTS', 500, 50, 1_000_000),
    scenarios: list(env, 'BENCH_SCENARIOS'),
    targets: list(env, 'BENCH_TARGETS'),
    cpuProfile: ['1', 'true', 'yes'].includes((env.BENCH_CPU_PROFILE ?? '').trim().toLowerCase()),
    subgraphEntry: env.BENCH_SUBGRAPH_ENTRY?.trim() || null,
    baselineEntry: baselineEntry(env.BENCH_BASELINE_DIST?.trim() || null),
    coldStarts: integer(env, 'BENCH_COLD_STARTS', 3, 0, 20),
    heapSeconds: integer(env, 'BENCH_HEAP_S', 0, 0, 3600),
    nodeOptions: env.BENCH_NODE_OPTIONS === undefined ? DEPLOYED_NODE_OPTIONS : env.BENCH_NODE_OPTIONS.trim() || null,
  });
}

/** A `dist/` folder stands for its `index.js`; a file is the entry itself. */
function baselineEntry(path: string | null): string | null {
  if (path === null) return null;
  const entry = existsSync(path) && statSync(path).isDirectory() ? join(path, 'index.js') : path;
  if (!existsSync(entry)) throw new Error(`BENCH_BASELINE_DIST: ${entry} is missing (run \`npm run build\` in that checkout first)`);
  return resolve(entry);
}

/**
 * The repository root (where package.json and schema.graphql live), found from this
 * module whether it runs from `bench/` or from the compiled `dist/bench/bench/`.
 */
export function repoRoot(from: string = __dirname): string {
  let dir = from;
  for (;;) {
    if (existsSync(join(dir, 'schema.graphql')) && existsSync(join(dir, 'package.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the repository root (schema.graphql) above ${from}`);
    dir = parent;
  }
}
