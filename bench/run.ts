/**
 * `npm run bench`: the same scenarios against up to nine targets, side by side.
 *
 * - direct:   a client calling the upstream REST API itself (token once, then list calls).
 * - floor:    bench/floor/server.ts: node:http + undici + graphql-js on a cached document, nothing else.
 * - proxy:    the same server without graphql-js: request in, one upstream call, JSON out.
 * - naive:    bench/naive/server.ts, the straightforward GraphQL server (token per request, N+1).
 * - apollo:   the same server made lean (token kept per company, Apollo's per-field plugins off):
 *             the least Apollo Server does for the answer (no-sharing only).
 * - subgraph: the product, `node dist/index.js`, configured as deployed (window 0: WFS_FRESHNESS_SECONDS).
 * - subgraph-f5: the same with a window of 5 s (the cache scenarios only).
 * - floor-f5: the floor keeping each page it read for 5 s (the repeated-read scenarios only).
 * - today, today-f5: today's build (BENCH_BASELINE_DIST) at its default window and at 5 s.
 *
 * The servers run pinned to core 0 and the emulator and this load generator to core 1
 * (taskset), each a separate process on loopback. Then cold starts (spawn to first
 * correct answer) and, with BENCH_HEAP_S, a long run that follows the heap after GC.
 * Prints a table and writes bench/results/run-<timestamp>.json.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { BenchTenant } from './emulatorProcess';
import { runLoad, type Job } from './load';
import { PINNING, cpuTimeMs, measureColdStart, peakRssMiB, pinSelf, startEmulatorProcess, startServerProcess, type ServerChild, type ServerProcessOptions, type ServerTarget } from './processes';
import { describeMachine, formatTable, machineInfo, measure, withRatios, writeReport, type Measurement, type TargetName } from './report';
import { DirectClient, LOCATIONS_PATH } from './rest';
import { COLD_START_QUERY, SCENARIOS, type DigestJob, type GraphQLCaller, type Scenario } from './scenarios';
import { readSettings, repoRoot, type BenchSettings } from './settings';

const TARGETS: readonly TargetName[] = ['direct', 'floor', 'proxy', 'naive', 'apollo', 'today', 'subgraph', 'today-f5', 'subgraph-f5', 'floor-f5'];
const SERVERS: readonly ServerTarget[] = ['floor', 'proxy', 'naive', 'apollo', 'today', 'subgraph', 'today-f5', 'subgraph-f5', 'floor-f5'];
/** Today's build, measured only with BENCH_BASELINE_DIST. */
const BASELINE_TARGETS: readonly TargetName[] = ['today', 'today-f5'];
/** Servers whose cold start is measured: one per module and build (apollo is naive's, an -f5 target its build's). */
const COLD_STARTED: readonly ServerTarget[] = ['floor', 'proxy', 'naive', 'today', 'subgraph'];
/** A cache scenario's measured run ends on BENCH_DURATION_S alone (Scenario.cache): a count it never reaches. */
const CACHE_RUN_MAX_REQUESTS = 500_000;
/** Warm-up is bounded by time too, so a slow target does not eat the budget. */
const WARMUP_MAX_MS = 2_000;
const COMPANIES_WARMUP_MAX_MS = 10_000;
/** Apollo's start-up notice on a subgraph that did not configure inline tracing itself (the naive server). */
const KNOWN_NOISE = /^Enabling inline tracing for this subgraph/;

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function graphQLCaller(url: string, dispatcher: Agent): GraphQLCaller {
  return async (tenantId, query, variables, headers) => {
    const response = await request(url, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', 'x-tenant-id': tenantId, ...headers },
      body: JSON.stringify(variables ? { query, variables } : { query }),
    });
    const text = await response.body.text();
    let body: { data?: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> };
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`HTTP ${response.statusCode}, not JSON: ${text.slice(0, 120)}`);
    }
    if (response.statusCode !== 200 || body.errors?.length) {
      const first = body.errors?.[0];
      throw new Error(`HTTP ${response.statusCode}: ${first ? `${first.extensions?.code ?? 'ERROR'} ${first.message}` : text.slice(0, 120)}`);
    }
    return body.data;
  };
}

/** Spawn to first correct answer, `count` times per server, plus the direct client's first answer. */
async function coldStarts(settings: BenchSettings, options: ServerProcessOptions, tenant: BenchTenant, authUrl: string, targets: readonly TargetName[]): Promise<Record<string, number[]>> {
  const results: Record<string, number[]> = {};
  const probeAgent = new Agent({ connections: 1, keepAliveTimeout: 1_000 });
  try {
    // `apollo` is the naive server's module with other settings: the same start.
    for (const target of COLD_STARTED.filter((t) => targets.includes(t))) {
      const call = (url: string) => graphQLCaller(url, probeAgent);
      results[target] = [];
      for (let i = 0; i < settings.coldStarts; i++) {
        const ms = await measureColdStart(target, options, async (url) => {
          const data = await call(url)(tenant.tenantId, COLD_START_QUERY);
          if (data?.locations?.nodes?.length !== 100) throw new Error('not the 100 locations yet');
        });
        results[target]!.push(Math.round(ms));
      }
      log(`bench: cold start ${target.padEnd(8)} ${results[target]!.join(', ')} ms`);
    }
    if (targets.includes('direct')) {
      results.direct = [];
      for (let i = 0; i < settings.coldStarts; i++) {
        const started = performance.now();
        await new DirectClient(authUrl, probeAgent).page(tenant, LOCATIONS_PATH, 100, null);
        results.direct.push(Math.round(performance.now() - started));
      }
      log(`bench: cold start direct    ${results.direct.join(', ')} ms (token + one list call, no process)`);
    }
  } finally {
    await probeAgent.close();
  }
  return results;
}

/**
 * A scenario's targets: its own, and today's build wherever the subgraph runs (so every
 * scenario compares the subgraph with today's).
 */
function targetsOf(scenario: Scenario): readonly TargetName[] {
  return scenario.targets.includes('subgraph') && !scenario.targets.includes('today') ? [...scenario.targets, 'today'] : scenario.targets;
}

/**
 * The companies a worker reads (Scenario.companies): company w mod n with fewer
 * companies than workers, else companies w, w + workers, w + 2 workers...
 */
function companiesOf(worker: number, workers: number, companies: readonly BenchTenant[]): BenchTenant[] {
  if (companies.length <= workers) return [companies[worker % companies.length]!];
  const own: BenchTenant[] = [];
  for (let index = worker; index < companies.length; index += workers) own.push(companies[index]!);
  return own;
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

/**
 * A long mixed run on a fresh subgraph started with --trace-gc: the heap size after
 * every full (mark-compact) GC, so a leak shows as a rising line.
 */
async function heapRun(settings: BenchSettings, options: ServerProcessOptions, tenants: readonly BenchTenant[]) {
  const server = await startServerProcess('subgraph', { ...options, execArgv: ['--trace-gc'] });
  const samples: Array<{ atS: number; heapAfterGcMiB: number }> = [];
  const started = performance.now();
  let pending = '';
  server.child.process.stdout?.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const match = /Mark-Compact.*?-> ([\d.]+) \(/.exec(line);
      if (match) samples.push({ atS: Math.round((performance.now() - started) / 100) / 10, heapAfterGcMiB: Number(match[1]) });
    }
  });
  const agent = new Agent({ connections: settings.concurrency, keepAliveTimeout: 10_000 });
  try {
    const call = graphQLCaller(server.url, agent);
    const mixed = SCENARIOS.find((s) => s.name === 'tenants')!;
    const load = await runLoad(
      (worker) => {
        const job = mixed.graphql(call, tenants[worker % tenants.length]!);
        return async () => {
          await job();
        };
      },
      { concurrency: settings.concurrency, maxRequests: 100_000_000, maxDurationMs: settings.heapSeconds * 1000 },
    );
    const peak = peakRssMiB(server.child.process.pid);
    const minute = Math.min(60, settings.heapSeconds / 3);
    const firstWindow = samples.filter((s) => s.atS <= minute).map((s) => s.heapAfterGcMiB);
    const lastWindow = samples.filter((s) => s.atS >= settings.heapSeconds - minute).map((s) => s.heapAfterGcMiB);
    const result = {
      seconds: settings.heapSeconds,
      requests: load.ok,
      errors: load.errors,
      fullGcs: samples.length,
      heapAfterGcMiB: { firstWindowMedian: median(firstWindow), lastWindowMedian: median(lastWindow), max: Math.max(...samples.map((s) => s.heapAfterGcMiB)) },
      peakRssMiB: peak,
      samples,
    };
    log(`bench: heap run ${result.seconds} s, ${result.requests} requests, ${result.fullGcs} full GCs, heap after GC ${result.heapAfterGcMiB.firstWindowMedian} MiB (first ${minute} s) -> ${result.heapAfterGcMiB.lastWindowMedian} MiB (last ${minute} s), peak RSS ${peak} MiB`);
    return result;
  } finally {
    await agent.close();
    await server.stop();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const settings = readSettings();
  const root = repoRoot();
  const timestamp = new Date().toISOString();
  const subgraphEntry = settings.subgraphEntry ?? join(root, 'dist', 'index.js');
  if (!existsSync(subgraphEntry)) throw new Error(`${subgraphEntry} is missing: run \`npm run build\` first (npm run bench does)`);
  const scenarios = SCENARIOS.filter((s) => !settings.scenarios || settings.scenarios.includes(s.name));
  const targets = TARGETS.filter((t) => (!settings.targets || settings.targets.includes(t)) && (settings.baselineEntry !== null || !BASELINE_TARGETS.includes(t)));
  if (settings.baselineEntry === null && BASELINE_TARGETS.some((t) => settings.targets?.includes(t))) throw new Error("BENCH_TARGETS names today's build: set BENCH_BASELINE_DIST to its dist/ folder");
  if (scenarios.length === 0 || targets.length === 0) throw new Error(`nothing to run: scenarios ${SCENARIOS.map((s) => s.name).join(',')}; targets ${TARGETS.join(',')}`);
  pinSelf();
  const pinning = PINNING ? `servers on cpu ${PINNING.subject}; emulator and load generator on cpu ${PINNING.rest} (${PINNING.taskset})` : 'not pinned (no taskset or fewer than 2 cores)';
  const machine = machineInfo(root);
  log(`bench: ${describeMachine(machine)}; ${pinning}`);
  log(
    `bench: upstream latency ${settings.latencyMs} ms, concurrency ${settings.concurrency}, ` +
      `${settings.maxRequests} requests or ${settings.maxDurationMs / 1000} s per run after ${settings.warmupRequests} warm-up requests, ` +
      `${settings.tenants} tenants x ${settings.locationsPerTenant} locations, ${settings.shiftsPerTenant} shifts; servers run with NODE_OPTIONS=${settings.nodeOptions ?? '(none)'}`,
  );

  // A company per worker where a scenario asks for it (no-sharing), a scenario's companies
  // and one more (its same-data check reads a company its load does not), at least BENCH_TENANTS.
  const companies = Math.max(
    settings.tenants,
    ...scenarios.filter((s) => s.tenants === 'per-worker').map((s) => s.concurrency ?? settings.concurrency),
    ...scenarios.map((s) => (s.companies ?? 0) + 1),
  );
  const emulator = await startEmulatorProcess({
    latencyMs: settings.latencyMs,
    tenants: companies,
    locationsPerTenant: settings.locationsPerTenant,
    shiftsPerTenant: settings.shiftsPerTenant,
  });
  const servers: Partial<Record<TargetName, ServerChild>> = {};
  const allTenants = emulator.ready.tenants;
  /** The BENCH_TENANTS companies every scenario but no-sharing uses. */
  const tenants = allTenants.slice(0, settings.tenants);
  const workDir = mkdtempSync(join(tmpdir(), 'wfs-bench-'));
  const tenantsFile = join(workDir, 'tenants.json');
  writeFileSync(tenantsFile, JSON.stringify(allTenants.map(({ tenantId, clientId, clientSecret, scope }) => ({ tenantId, clientId, clientSecret, scope }))), { mode: 0o600 });
  const profileDir = settings.cpuProfile ? join(root, 'dist', 'bench', 'profiles') : null;
  // A compile cache of this run's own: the first cold start fills it, the later ones use it.
  const serverOptions: ServerProcessOptions = {
    authUrl: emulator.ready.authUrl,
    tenantsFile,
    profileDir,
    subgraphEntry,
    baselineEntry: settings.baselineEntry,
    compileCacheDir: join(workDir, 'compile-cache'),
    nodeOptions: settings.nodeOptions,
  };
  const agent = new Agent({ connections: Math.max(settings.concurrency, 64), keepAliveTimeout: 10_000, pipelining: 1 });
  const direct = new DirectClient(emulator.ready.authUrl, agent);

  try {
    const coldStartMs = settings.coldStarts > 0 ? await coldStarts(settings, serverOptions, tenants[0]!, emulator.ready.authUrl, targets) : {};
    // A server that serves more than one scenario runs for the whole bench; a cache scenario starts its own.
    for (const target of SERVERS) {
      if (targets.includes(target) && scenarios.some((s) => !s.cache && targetsOf(s).includes(target))) servers[target] = await startServerProcess(target, serverOptions);
    }
    const callers: Partial<Record<TargetName, GraphQLCaller>> = {};
    for (const target of SERVERS) {
      const server = servers[target];
      if (server) callers[target] = graphQLCaller(server.url, agent);
    }
    const jobFor = (scenario: Scenario, target: TargetName, tenant: BenchTenant): DigestJob =>
      target === 'direct' ? scenario.direct(direct, tenant) : scenario.graphql(callers[target]!, tenant);
    // Workers are spread over the scenario's tenants, each worker staying with one, or
    // over its companies, each worker reading its own in turn. A cache scenario's workers
    // keep their jobs, so the measured run goes on where the warm-up stopped.
    const makeJob = (scenario: Scenario, target: TargetName) => {
      const spread = scenario.tenants === 'per-worker' ? allTenants : scenario.tenants === 0 ? tenants : tenants.slice(0, scenario.tenants ?? 2);
      const workers = scenario.concurrency ?? settings.concurrency;
      const kept = new Map<number, Job>();
      return (worker: number): Job => {
        const known = kept.get(worker);
        if (known) return known;
        const read = scenario.companies ? companiesOf(worker, workers, allTenants.slice(0, scenario.companies)) : [spread[worker % spread.length]!];
        const jobs = read.map((tenant) => jobFor(scenario, target, tenant));
        let turn = 0;
        const job: Job = async () => {
          await jobs[turn++ % jobs.length]!();
        };
        if (scenario.cache) kept.set(worker, job);
        return job;
      };
    };

    // A scenario with companies of its own reads each of them at least twice in the warm-up
    // (more time allowed for it), so the tokens of 200 companies are not counted as calls
    // of the measured run, for one target and not another.
    const warmup = (scenario: Scenario) => ({
      concurrency: scenario.concurrency ?? settings.concurrency,
      maxRequests: Math.max(settings.warmupRequests, 2 * (scenario.companies ?? 0)),
      maxDurationMs: scenario.companies ? COMPANIES_WARMUP_MAX_MS : WARMUP_MAX_MS,
    });
    const rows: Array<Omit<Measurement, 'ratios'>> = [];
    /** What the servers cache scenarios started for themselves logged (level error and above). */
    const ownLogs: Record<string, string> = {};
    const tokenRequestsPerTarget: Record<string, number> = {};
    for (const scenario of scenarios) {
      log(`bench: ${scenario.name}: ${scenario.description}`);
      const concurrency = scenario.concurrency ?? settings.concurrency;
      // Same data from every target? The first answer of a fresh job, for the first tenant
      // (in a scenario with companies of its own: the one after them, which its load never reads).
      const checked = scenario.companies ? allTenants[scenario.companies]! : tenants[0]!;
      const reference = targets.includes('direct') ? await jobFor(scenario, 'direct', checked)() : null;
      for (const target of targets.filter((t) => targetsOf(scenario).includes(t))) {
        // A cache scenario's own server for this target: fresh, and stopped before the next target runs.
        const own = scenario.cache && target !== 'direct' ? await startServerProcess(target as ServerTarget, serverOptions) : null;
        const shared = callers[target];
        if (own) callers[target] = graphQLCaller(own.url, agent);
        try {
          const tokensBefore = (await emulator.counters()).tokenRequests;
          const sameData = target === 'direct' || reference === null ? null : (await jobFor(scenario, target, checked)()) === reference;
          const job = makeJob(scenario, target);
          await runLoad(job, warmup(scenario));
          const warmupTokens = (await emulator.counters()).tokenRequests - tokensBefore;
          await emulator.resetCounters();
          const serverPid = target === 'direct' ? undefined : (own ?? servers[target])?.child.process.pid;
          const cpuBefore = { server: cpuTimeMs(serverPid), emulator: cpuTimeMs(emulator.child.process.pid), loadGenerator: process.cpuUsage() };
          const maxRequests = scenario.cache ? CACHE_RUN_MAX_REQUESTS : settings.maxRequests;
          const load = await runLoad(job, { concurrency, maxRequests, maxDurationMs: settings.maxDurationMs });
          const counters = await emulator.counters();
          const since = (before: number | null, after: number | null) => (before === null || after === null ? null : after - before);
          const loadCpu = process.cpuUsage(cpuBefore.loadGenerator);
          const cpu = {
            server: since(cpuBefore.server, cpuTimeMs(serverPid)),
            emulator: since(cpuBefore.emulator, cpuTimeMs(emulator.child.process.pid)),
            loadGenerator: (loadCpu.user + loadCpu.system) / 1000,
          };
          const tokenRequestsInScenario = warmupTokens + counters.tokenRequests;
          tokenRequestsPerTarget[target] = (tokenRequestsPerTarget[target] ?? 0) + tokenRequestsInScenario;
          const row = measure(
            { scenario: scenario.name, baseline: scenario.baseline ?? scenario.name, target, concurrency, sameDataAsDirect: sameData, peakRssMiB: peakRssMiB(serverPid), tokenRequestsInScenario },
            load,
            counters,
            cpu,
          );
          rows.push(row);
          log(
            `bench:   ${target.padEnd(11)} ${row.requestsPerSecond.toFixed(0).padStart(6)} req/s  p50 ${row.latencyMs.p50.toFixed(1)} ms` +
              `  p99 ${row.latencyMs.p99.toFixed(1)} ms  ${row.upstreamPerRequest.token.toFixed(2)} token + ${row.upstreamPerRequest.list.toFixed(2)} list calls/req` +
              `  cpu ms/req: server ${row.cpuMsPerRequest.server?.toFixed(2) ?? '-'}, emulator ${row.cpuMsPerRequest.emulator?.toFixed(2) ?? '-'}, load ${row.cpuMsPerRequest.loadGenerator.toFixed(2)}` +
              (row.coreBusy === null ? '' : `  server core busy ${Math.round(row.coreBusy * 100)} %`) +
              `  tokens in scenario ${tokenRequestsInScenario}` +
              (row.errors ? `  ${row.errors} errors, first: ${row.firstError}` : ''),
          );
        } finally {
          if (own) {
            await own.stop();
            ownLogs[`${target} (${scenario.name})`] = own.child.output();
            if (shared) callers[target] = shared;
            else delete callers[target];
          }
        }
      }
    }

    const heap = settings.heapSeconds > 0 ? await heapRun(settings, serverOptions, tenants) : null;
    const measurements = withRatios(rows);
    const serverLogs: Record<string, string> = { ...ownLogs };
    for (const [name, server] of Object.entries(servers)) await server.stop().then(() => (serverLogs[name] = server.child.output()));
    const report = {
      timestamp,
      command: [...Object.entries(process.env).filter(([name]) => name.startsWith('BENCH_')).map(([name, value]) => `${name}=${value}`), 'npm run bench'].join(' '),
      settings,
      machine,
      machineAfter: { loadAverage: machineInfo(root).loadAverage },
      pinning,
      totalSeconds: Math.round((Date.now() - started) / 100) / 10,
      measurements,
      coldStartMs,
      tokenRequestsPerTarget,
      heap,
      serverLogs,
    };
    const path = writeReport(root, report);

    process.stdout.write(`\n${describeMachine(machine)}; ${pinning}\n`);
    process.stdout.write(
      `upstream latency ${settings.latencyMs} ms/response, ${settings.tenants} tenants (${companies} with no-sharing), ` +
        `${settings.maxRequests} requests or ${settings.maxDurationMs / 1000} s per run (* = stopped by time), ${timestamp}\n\n`,
    );
    process.stdout.write(`${formatTable(measurements)}\n\n`);
    const coldLine = Object.entries(coldStartMs).map(([target, values]) => `${target} ${median(values)} ms (${values.join(', ')})`);
    if (coldLine.length) process.stdout.write(`cold start, spawn to first correct answer, median (each run): ${coldLine.join('; ')}\n`);
    const floorCold = coldStartMs.floor ? median(coldStartMs.floor) : null;
    if (floorCold && coldStartMs.subgraph) process.stdout.write(`cold start subgraph / floor: ${(median(coldStartMs.subgraph) / floorCold).toFixed(2)}x\n`);
    const rss = (target: TargetName) => measurements.find((m) => m.scenario === 'locations' && m.target === target)?.peakRssMiB ?? null;
    if (rss('subgraph') && rss('floor')) process.stdout.write(`peak RSS after locations at ${settings.concurrency} in flight, subgraph / floor: ${rss('subgraph')} / ${rss('floor')} MiB = ${(rss('subgraph')! / rss('floor')!).toFixed(2)}x\n`);
    const rps = (scenario: string) => measurements.find((m) => m.scenario === scenario && m.target === 'subgraph')?.requestsPerSecond;
    if (rps('locations-ftv1') && rps('locations')) process.stdout.write(`inline trace on / off (subgraph, locations): ${(rps('locations-ftv1')! / rps('locations')!).toFixed(2)}x\n`);
    process.stdout.write(`token requests over the whole run, per target (${companies} companies): ${Object.entries(tokenRequestsPerTarget).map(([t, n]) => `${t} ${n}`).join(', ')}\n`);
    for (const m of measurements) {
      if (m.errors > 0) process.stdout.write(`! ${m.scenario}/${m.target}: ${m.errors} errors, first: ${m.firstError}\n`);
      if (m.sameDataAsDirect === false) process.stdout.write(`! ${m.scenario}/${m.target}: its first answer differs from the direct client's\n`);
    }
    for (const [name, output] of Object.entries(serverLogs)) {
      const lines = output.split('\n').filter((line) => line.trim() && !KNOWN_NOISE.test(line));
      if (lines.length > 0) process.stdout.write(`! ${name} wrote ${lines.length} log lines (level error and above), first: ${lines[0]!.slice(0, 200)}\n`);
    }
    process.stdout.write(`results: ${path} (${report.totalSeconds} s)\n`);
  } finally {
    rmSync(workDir, { recursive: true, force: true });
    await agent.close();
    await Promise.all(Object.values(servers).map((server) => server.stop()));
    await emulator.stop();
  }
}

process.on('SIGINT', () => process.exit(130));
main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
