import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { mean, percentile, type LoadResult } from './load';
import type { UpstreamCounters } from './emulatorProcess';
import type { BenchSettings } from './settings';

import type { TargetName } from './scenarios';

export type { TargetName } from './scenarios';

/** One measured run: one scenario against one target. */
export interface Measurement {
  readonly scenario: string;
  /** The scenario whose floor, naive and direct rows the ratios use. */
  readonly baseline: string;
  readonly target: TargetName;
  readonly concurrency: number;
  readonly requests: number;
  readonly errors: number;
  readonly firstError: string | null;
  readonly durationMs: number;
  readonly stoppedBy: 'count' | 'time';
  readonly requestsPerSecond: number;
  readonly latencyMs: { readonly p50: number; readonly p95: number; readonly p99: number; readonly mean: number; readonly max: number };
  /**
   * Upstream calls per request during the measured run (emulator counters): every call the
   * emulator answered, live polls and token requests included, in `calls`.
   */
  readonly upstreamPerRequest: { readonly calls: number; readonly token: number; readonly list: number; readonly locations: number; readonly shifts: number };
  /**
   * CPU time per request, in ms, during the measured run: of the GraphQL server (null
   * for direct, or where /proc is missing), of the emulator, and of the load generator.
   */
  readonly cpuMsPerRequest: { readonly server: number | null; readonly emulator: number | null; readonly loadGenerator: number };
  /** Share of the measured run's wall time the server process was on a CPU (its pinned core), 0-1; null for direct. */
  readonly coreBusy: number | null;
  /** Whether the first answer had the same data as the direct client's (null for direct itself). */
  readonly sameDataAsDirect: boolean | null;
  /** The server's peak resident set (VmHWM) at the end of this run, in MiB (null for direct). */
  readonly peakRssMiB: number | null;
  /** Token requests this target caused in this scenario, warm-up and first answer included. */
  readonly tokenRequestsInScenario: number;
  /**
   * req/s of this target divided by floor's, naive's, direct's and apollo's; p50 likewise;
   * p50 minus the floor's; CPU per request against the floor's and apollo's; p99 against apollo's;
   * req/s and upstream calls per request against today's build's (`today`, BENCH_BASELINE_DIST).
   */
  readonly ratios: {
    readonly rpsVsFloor: number | null;
    readonly rpsVsApollo: number | null;
    readonly cpuVsFloor: number | null;
    readonly cpuVsApollo: number | null;
    readonly p99VsApollo: number | null;
    readonly rpsVsNaive: number | null;
    readonly rpsVsDirect: number | null;
    readonly rpsVsToday: number | null;
    readonly callsVsToday: number | null;
    readonly p50VsNaive: number | null;
    readonly p50VsDirect: number | null;
    readonly p50OverFloorMs: number | null;
  };
}

/** CPU ms each process used during a measured run (null where unknown). */
export interface CpuUsed {
  readonly server: number | null;
  readonly emulator: number | null;
  readonly loadGenerator: number;
}

export interface RunFacts {
  readonly scenario: string;
  readonly baseline: string;
  readonly target: TargetName;
  readonly concurrency: number;
  readonly sameDataAsDirect: boolean | null;
  readonly peakRssMiB: number | null;
  readonly tokenRequestsInScenario: number;
}

export function measure(facts: RunFacts, load: LoadResult, counters: UpstreamCounters, cpu: CpuUsed): Omit<Measurement, 'ratios'> {
  const { scenario, target, sameDataAsDirect } = facts;
  const sent = Math.max(1, load.ok + load.errors);
  const perRequest = (ms: number | null) => (ms === null ? null : round(ms / sent, 3));
  const sorted = load.latenciesMs;
  return {
    scenario,
    baseline: facts.baseline,
    target,
    concurrency: facts.concurrency,
    requests: load.ok,
    errors: load.errors,
    firstError: load.firstError,
    durationMs: round(load.durationMs, 1),
    stoppedBy: load.timeBound ? 'time' : 'count',
    requestsPerSecond: round(load.ok / (load.durationMs / 1000), 1),
    latencyMs: {
      p50: round(percentile(sorted, 50), 2),
      p95: round(percentile(sorted, 95), 2),
      p99: round(percentile(sorted, 99), 2),
      mean: round(mean(sorted), 2),
      max: round(sorted.length ? sorted[sorted.length - 1]! : Number.NaN, 2),
    },
    upstreamPerRequest: {
      calls: round((counters.tokenRequests + counters.lists) / sent, 4),
      token: round(counters.tokenRequests / sent, 3),
      list: round(counters.lists / sent, 3),
      locations: round(counters.locations / sent, 3),
      shifts: round(counters.shifts / sent, 3),
    },
    cpuMsPerRequest: { server: perRequest(cpu.server), emulator: perRequest(cpu.emulator), loadGenerator: round(cpu.loadGenerator / sent, 3) },
    coreBusy: cpu.server === null || load.durationMs <= 0 ? null : round(cpu.server / load.durationMs, 3),
    sameDataAsDirect,
    peakRssMiB: facts.peakRssMiB,
    tokenRequestsInScenario: facts.tokenRequestsInScenario,
  };
}

/** Adds the ratios against floor, naive and direct of the row's baseline scenario. */
export function withRatios(rows: ReadonlyArray<Omit<Measurement, 'ratios'>>): Measurement[] {
  return rows.map((row) => {
    const of = (target: TargetName) => rows.find((r) => r.scenario === row.baseline && r.target === target);
    // The repeated-read scenarios have the floor keeping pages (floor-f5) instead.
    const floor = of('floor') ?? of('floor-f5');
    const naive = of('naive');
    const direct = of('direct');
    const apollo = of('apollo');
    const today = of('today');
    const cpu = (m: Omit<Measurement, 'ratios'> | undefined) => m?.cpuMsPerRequest.server ?? undefined;
    const ratio = (a: number, b: number | undefined) => (b && Number.isFinite(a) && Number.isFinite(b) && b > 0 ? round(a / b, 2) : null);
    return {
      ...row,
      ratios: {
        rpsVsFloor: ratio(row.requestsPerSecond, floor?.requestsPerSecond),
        rpsVsApollo: ratio(row.requestsPerSecond, apollo?.requestsPerSecond),
        cpuVsFloor: ratio(cpu(row) ?? NaN, cpu(floor)),
        cpuVsApollo: ratio(cpu(row) ?? NaN, cpu(apollo)),
        p99VsApollo: ratio(row.latencyMs.p99, apollo?.latencyMs.p99),
        rpsVsNaive: ratio(row.requestsPerSecond, naive?.requestsPerSecond),
        rpsVsDirect: ratio(row.requestsPerSecond, direct?.requestsPerSecond),
        rpsVsToday: ratio(row.requestsPerSecond, today?.requestsPerSecond),
        callsVsToday: ratio(row.upstreamPerRequest.calls, today?.upstreamPerRequest.calls),
        p50VsNaive: ratio(row.latencyMs.p50, naive?.latencyMs.p50),
        p50VsDirect: ratio(row.latencyMs.p50, direct?.latencyMs.p50),
        p50OverFloorMs: floor && Number.isFinite(floor.latencyMs.p50) ? round(row.latencyMs.p50 - floor.latencyMs.p50, 2) : null,
      },
    };
  });
}

function round(value: number, digits: number): number {
  if (!Number.isFinite(value)) return value;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

const COLUMNS: ReadonlyArray<{ title: string; align: 'l' | 'r'; cell(m: Measurement): string }> = [
  { title: 'scenario', align: 'l', cell: (m) => m.scenario },
  { title: 'target', align: 'l', cell: (m) => m.target },
  { title: 'in flight', align: 'r', cell: (m) => String(m.concurrency) },
  { title: 'reqs', align: 'r', cell: (m) => String(m.requests) + (m.stoppedBy === 'time' ? '*' : '') },
  { title: 'err', align: 'r', cell: (m) => String(m.errors) },
  { title: 'req/s', align: 'r', cell: (m) => m.requestsPerSecond.toFixed(0) },
  { title: 'p50 ms', align: 'r', cell: (m) => m.latencyMs.p50.toFixed(1) },
  { title: 'p95 ms', align: 'r', cell: (m) => m.latencyMs.p95.toFixed(1) },
  { title: 'p99 ms', align: 'r', cell: (m) => m.latencyMs.p99.toFixed(1) },
  { title: 'token/req', align: 'r', cell: (m) => m.upstreamPerRequest.token.toFixed(2) },
  { title: 'list/req', align: 'r', cell: (m) => m.upstreamPerRequest.list.toFixed(2) },
  // Every upstream call (token, list, live polls) per request: what a cache saves or adds.
  { title: 'calls/req', align: 'r', cell: (m) => m.upstreamPerRequest.calls.toFixed(m.upstreamPerRequest.calls < 0.1 ? 4 : 2) },
  // Direct has no server process: its client runs in the load generator, whose CPU per request it shows (marked `c`).
  { title: 'cpu ms/req', align: 'r', cell: (m) => (m.cpuMsPerRequest.server !== null ? m.cpuMsPerRequest.server.toFixed(2) : m.target === 'direct' ? `${m.cpuMsPerRequest.loadGenerator.toFixed(2)}c` : '-') },
  { title: 'load cpu ms/req', align: 'r', cell: (m) => m.cpuMsPerRequest.loadGenerator.toFixed(2) },
  { title: 'core busy', align: 'r', cell: (m) => (m.coreBusy === null ? '-' : `${Math.round(m.coreBusy * 100)} %`) },
  { title: 'RSS MiB', align: 'r', cell: (m) => (m.peakRssMiB === null ? '-' : m.peakRssMiB.toFixed(0)) },
  { title: 'req/s vs floor', align: 'r', cell: (m) => times(m.ratios.rpsVsFloor) },
  { title: 'req/s vs naive', align: 'r', cell: (m) => times(m.ratios.rpsVsNaive) },
  { title: 'req/s vs direct', align: 'r', cell: (m) => times(m.ratios.rpsVsDirect) },
  { title: 'req/s vs apollo', align: 'r', cell: (m) => times(m.ratios.rpsVsApollo) },
  { title: 'req/s vs today', align: 'r', cell: (m) => times(m.ratios.rpsVsToday) },
  { title: 'calls vs today', align: 'r', cell: (m) => times(m.ratios.callsVsToday) },
  { title: 'cpu vs floor', align: 'r', cell: (m) => times(m.ratios.cpuVsFloor) },
  { title: 'cpu vs apollo', align: 'r', cell: (m) => times(m.ratios.cpuVsApollo) },
  { title: 'p99 vs apollo', align: 'r', cell: (m) => times(m.ratios.p99VsApollo) },
  { title: 'p50 - floor', align: 'r', cell: (m) => (m.ratios.p50OverFloorMs === null ? '-' : `${m.ratios.p50OverFloorMs >= 0 ? '+' : ''}${m.ratios.p50OverFloorMs.toFixed(1)} ms`) },
  { title: 'p50 vs direct', align: 'r', cell: (m) => times(m.ratios.p50VsDirect) },
  { title: 'same data', align: 'l', cell: (m) => (m.sameDataAsDirect === null ? '-' : m.sameDataAsDirect ? 'yes' : 'NO') },
];

function times(value: number | null): string {
  return value === null ? '-' : `${value.toFixed(2)}x`;
}

/** The plain-text table, one row per scenario and target, a blank line between scenarios. */
export function formatTable(rows: readonly Measurement[]): string {
  const cells = rows.map((row) => COLUMNS.map((column) => column.cell(row)));
  const widths = COLUMNS.map((column, i) => Math.max(column.title.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: readonly string[]) =>
    values.map((value, i) => (COLUMNS[i]!.align === 'l' ? value.padEnd(widths[i]!) : value.padStart(widths[i]!))).join('  ').trimEnd();
  const out = [line(COLUMNS.map((c) => c.title)), line(widths.map((w) => '-'.repeat(w)))];
  rows.forEach((row, index) => {
    if (index > 0 && rows[index - 1]!.scenario !== row.scenario) out.push('');
    out.push(line(cells[index]!));
  });
  return out.join('\n');
}

export interface MachineInfo {
  readonly node: string;
  readonly v8: string;
  readonly platform: string;
  readonly release: string;
  readonly arch: string;
  readonly cpus: ReadonlyArray<{ model: string; speedMHz: number }>;
  readonly totalMemoryMiB: number;
  readonly loadAverage: readonly number[];
  readonly git: { commit: string | null; dirty: boolean | null };
}

export function machineInfo(root: string): MachineInfo {
  const git = (args: string[]): string | null => {
    try {
      return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return null;
    }
  };
  const status = git(['status', '--porcelain']);
  return {
    node: process.version,
    v8: process.versions.v8,
    platform: os.platform(),
    release: os.release(),
    arch: os.arch(),
    cpus: os.cpus().map((cpu) => ({ model: cpu.model, speedMHz: cpu.speed })),
    totalMemoryMiB: Math.round(os.totalmem() / 2 ** 20),
    loadAverage: os.loadavg().map((value) => Math.round(value * 100) / 100),
    git: { commit: git(['rev-parse', 'HEAD']), dirty: status === null ? null : status.length > 0 },
  };
}

export function describeMachine(machine: MachineInfo): string {
  const models = [...new Set(machine.cpus.map((cpu) => cpu.model))].join(', ');
  return `node ${machine.node} on ${machine.platform} ${machine.arch}, ${machine.cpus.length} x ${models}, load average ${machine.loadAverage.join(' ')}`;
}

export interface RunReport {
  readonly timestamp: string;
  readonly command: string;
  readonly settings: BenchSettings;
  readonly machine: MachineInfo;
  readonly machineAfter: { readonly loadAverage: readonly number[] };
  readonly totalSeconds: number;
  readonly measurements: readonly Measurement[];
  readonly coldStartMs: Record<string, readonly number[]>;
  readonly tokenRequestsPerTarget: Record<string, number>;
  readonly heap: unknown;
  readonly pinning: string;
  readonly serverLogs: Record<string, string>;
}

/** Writes bench/results/run-<timestamp>.json and returns its path. */
export function writeReport(root: string, report: RunReport): string {
  const dir = join(root, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `run-${report.timestamp.replace(/[:.]/g, '-')}.json`);
  writeFileSync(path, JSON.stringify(report, null, 2) + '\n');
  return path;
}
