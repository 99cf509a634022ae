/**
 * `npm run bench`: the same scenarios against three targets, side by side.
 *
 * - direct:   a client calling the upstream REST API itself (token once, then list calls): the floor.
 * - naive:    bench/naive/server.ts, the straightforward GraphQL server (token per request, N+1).
 * - subgraph: the product, `node dist/index.js`, configured as deployed.
 *
 * The emulator, each server and this load generator run as separate processes on
 * loopback. Prints a table and writes bench/results/run-<timestamp>.json.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Agent, request } from 'undici';
import type { BenchTenant } from './emulatorProcess';
import { runLoad, type Job } from './load';
import { cpuTimeMs, startEmulatorProcess, startNaiveProcess, startSubgraphProcess, type ServerChild } from './processes';
import { describeMachine, formatTable, machineInfo, measure, withRatios, writeReport, type Measurement, type TargetName } from './report';
import { DirectClient } from './rest';
import { SCENARIOS, type DigestJob, type GraphQLCaller, type Scenario } from './scenarios';
import { readSettings, repoRoot } from './settings';

const TARGETS: readonly TargetName[] = ['direct', 'naive', 'subgraph'];
/** Warm-up is bounded by time too, so a slow target does not eat the budget. */
const WARMUP_MAX_MS = 3_000;
/** Apollo's start-up notice on every subgraph (inline tracing only runs when a router asks for it). */
const KNOWN_NOISE = /^Enabling inline tracing for this subgraph/;

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function graphQLCaller(url: string, dispatcher: Agent): GraphQLCaller {
  return async (tenantId, query, variables) => {
    const response = await request(url, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', 'x-tenant-id': tenantId },
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

async function main(): Promise<void> {
  const started = Date.now();
  const settings = readSettings();
  const root = repoRoot();
  const timestamp = new Date().toISOString();
  const subgraphEntry = settings.subgraphEntry ?? join(root, 'dist', 'index.js');
  if (!existsSync(subgraphEntry)) throw new Error(`${subgraphEntry} is missing: run \`npm run build\` first (npm run bench does)`);
  const scenarios = SCENARIOS.filter((s) => !settings.scenarios || settings.scenarios.includes(s.name));
  const targets = TARGETS.filter((t) => !settings.targets || settings.targets.includes(t));
  if (scenarios.length === 0 || targets.length === 0) throw new Error(`nothing to run: scenarios ${SCENARIOS.map((s) => s.name).join(',')}; targets ${TARGETS.join(',')}`);
  const machine = machineInfo(root);
  log(`bench: ${describeMachine(machine)}`);
  log(
    `bench: upstream latency ${settings.latencyMs} ms, concurrency ${settings.concurrency}, ` +
      `${settings.maxRequests} requests or ${settings.maxDurationMs / 1000} s per run after ${settings.warmupRequests} warm-up requests, ` +
      `${settings.tenants} tenants x ${settings.locationsPerTenant} locations, ${settings.shiftsPerTenant} shifts`,
  );

  const emulator = await startEmulatorProcess({
    latencyMs: settings.latencyMs,
    tenants: settings.tenants,
    locationsPerTenant: settings.locationsPerTenant,
    shiftsPerTenant: settings.shiftsPerTenant,
  });
  const servers: Partial<Record<TargetName, ServerChild>> = {};
  const tenants = emulator.ready.tenants;
  const tenantsFile = join(mkdtempSync(join(tmpdir(), 'wfs-bench-')), 'tenants.json');
  writeFileSync(tenantsFile, JSON.stringify(tenants.map(({ tenantId, clientId, clientSecret, scope }) => ({ tenantId, clientId, clientSecret, scope }))), { mode: 0o600 });
  const profileDir = settings.cpuProfile ? join(root, 'dist', 'bench', 'profiles') : null;
  const serverOptions = { authUrl: emulator.ready.authUrl, tenantsFile, profileDir, subgraphEntry };
  const agent = new Agent({ connections: settings.concurrency, keepAliveTimeout: 10_000, pipelining: 1 });
  const direct = new DirectClient(emulator.ready.authUrl, agent);

  try {
    if (targets.includes('naive')) servers.naive = await startNaiveProcess(serverOptions);
    if (targets.includes('subgraph')) servers.subgraph = await startSubgraphProcess(serverOptions);
    const callers: Partial<Record<TargetName, GraphQLCaller>> = {};
    for (const target of ['naive', 'subgraph'] as const) {
      const server = servers[target];
      if (server) callers[target] = graphQLCaller(server.url, agent);
    }
    const jobFor = (scenario: Scenario, target: TargetName, tenant: BenchTenant): DigestJob =>
      target === 'direct' ? scenario.direct(direct, tenant) : scenario.graphql(callers[target]!, tenant);
    // Workers are spread over the tenants, each worker staying with one.
    const makeJob = (scenario: Scenario, target: TargetName) => (worker: number): Job => {
      const job = jobFor(scenario, target, tenants[worker % tenants.length]!);
      return async () => {
        await job();
      };
    };

    const rows: Array<Omit<Measurement, 'ratios'>> = [];
    for (const scenario of scenarios) {
      log(`bench: ${scenario.name}: ${scenario.description}`);
      // Same data from every target? The first answer of a fresh job, for the first tenant.
      const reference = targets.includes('direct') ? await jobFor(scenario, 'direct', tenants[0]!)() : null;
      for (const target of targets) {
        const sameData = target === 'direct' || reference === null ? null : (await jobFor(scenario, target, tenants[0]!)()) === reference;
        await runLoad(makeJob(scenario, target), { concurrency: settings.concurrency, maxRequests: settings.warmupRequests, maxDurationMs: WARMUP_MAX_MS });
        await emulator.resetCounters();
        const serverPid = target === 'direct' ? undefined : servers[target]?.child.process.pid;
        const cpuBefore = { server: cpuTimeMs(serverPid), emulator: cpuTimeMs(emulator.child.process.pid), loadGenerator: process.cpuUsage() };
        const load = await runLoad(makeJob(scenario, target), {
          concurrency: settings.concurrency,
          maxRequests: settings.maxRequests,
          maxDurationMs: settings.maxDurationMs,
        });
        const counters = await emulator.counters();
        const since = (before: number | null, after: number | null) => (before === null || after === null ? null : after - before);
        const loadCpu = process.cpuUsage(cpuBefore.loadGenerator);
        const cpu = {
          server: since(cpuBefore.server, cpuTimeMs(serverPid)),
          emulator: since(cpuBefore.emulator, cpuTimeMs(emulator.child.process.pid)),
          loadGenerator: (loadCpu.user + loadCpu.system) / 1000,
        };
        const row = measure(scenario.name, target, load, counters, cpu, sameData);
        rows.push(row);
        log(
          `bench:   ${target.padEnd(8)} ${row.requestsPerSecond.toFixed(0).padStart(6)} req/s  p50 ${row.latencyMs.p50.toFixed(1)} ms` +
            `  p99 ${row.latencyMs.p99.toFixed(1)} ms  ${row.upstreamPerRequest.token.toFixed(2)} token + ${row.upstreamPerRequest.list.toFixed(2)} list calls/req` +
            `  cpu ms/req: server ${row.cpuMsPerRequest.server?.toFixed(2) ?? '-'}, emulator ${row.cpuMsPerRequest.emulator?.toFixed(2) ?? '-'}, load ${row.cpuMsPerRequest.loadGenerator.toFixed(2)}` +
            (row.errors ? `  ${row.errors} errors, first: ${row.firstError}` : ''),
        );
      }
    }

    const measurements = withRatios(rows);
    const serverLogs: Record<string, string> = {};
    for (const [name, server] of Object.entries(servers)) await server.stop().then(() => (serverLogs[name] = server.child.output()));
    const report = {
      timestamp,
      command: [...Object.entries(process.env).filter(([name]) => name.startsWith('BENCH_')).map(([name, value]) => `${name}=${value}`), 'npm run bench'].join(' '),
      settings,
      machine,
      machineAfter: { loadAverage: machineInfo(root).loadAverage },
      totalSeconds: Math.round((Date.now() - started) / 100) / 10,
      measurements,
      serverLogs,
    };
    const path = writeReport(root, report);

    process.stdout.write(`\n${describeMachine(machine)}\n`);
    process.stdout.write(
      `upstream latency ${settings.latencyMs} ms/response, concurrency ${settings.concurrency}, ` +
        `${settings.maxRequests} requests or ${settings.maxDurationMs / 1000} s per run (* = stopped by time), ${timestamp}\n\n`,
    );
    process.stdout.write(`${formatTable(measurements)}\n\n`);
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
    rmSync(dirname(tenantsFile), { recursive: true, force: true });
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
