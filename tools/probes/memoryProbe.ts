/**
 * `npm run probe:memory`: how much memory the built subgraph (`node dist/index.js`, with
 * the Docker image's runtime flags) needs for N companies of a given size, for sizing
 * (docs/operations.md, "Memory per company").
 *
 * The upstream emulator runs in this process with N generated companies; the subgraph
 * runs as a child process against it. Each company is browsed: all its locations (pages
 * of 100), 3 pages of 100 shifts with their location, one filtered page, and 20 shifts
 * spread over its list through `_entities` (7 queries for 200 locations), that sequence
 * `--reads` times in a row (default 2), so with a freshness window the second reads are
 * served from the pages the first ones kept. RSS and heap are read from the child's
 * `/metrics` before the browse, throughout it (the peak), right after it, and after an
 * idle time past the entity index's lifetime.
 *
 *   npm run probe:memory -- --companies 1000 --locations 200 --shifts 2000 --freshness-seconds 30
 *   options: --concurrency 8  --reads 2  --idle-seconds <the index lifetime + 10>
 *            --freshness-seconds <WFS_FRESHNESS_SECONDS>  --max-records <WFS_ENTITY_INDEX_MAX_RECORDS>
 *            --ttl-seconds <WFS_ENTITY_INDEX_TTL_SECONDS>  --max-minutes 30
 *            --node-options "<the subgraph's NODE_OPTIONS>" (default: the Dockerfile's flags)
 *
 * Everything binds 127.0.0.1; the run stops itself after --max-minutes, and the child is
 * stopped however the run ends. Exit code 1 when a query failed.
 */
import { request } from 'undici';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatedTenants, startEmulator, type EmulatorTenant } from '../emulator';
import { DEPLOYED_NODE_OPTIONS } from '../../bench/settings';
import { peakRssMiB, startServerProcess, type ServerChild } from '../../bench/processes';

export interface MemoryProbeOptions {
  readonly companies: number;
  readonly locations: number;
  readonly shifts: number;
  /** Companies browsed at the same time. */
  readonly concurrency: number;
  /** Times each company's browse is read, one after the other (2 or more: kept pages are read again). */
  readonly reads: number;
  /** Seconds to wait after the browse before the last reading (past the index lifetime). */
  readonly idleSeconds: number;
  /** WFS_FRESHNESS_SECONDS for the subgraph; undefined: its default (0, nothing kept). */
  readonly freshnessSeconds?: number | undefined;
  /** WFS_ENTITY_INDEX_MAX_RECORDS for the subgraph; undefined: its default. */
  readonly maxRecords?: number | undefined;
  /** WFS_ENTITY_INDEX_TTL_SECONDS for the subgraph; undefined: its default. */
  readonly ttlSeconds?: number | undefined;
  /** The whole run's time limit. */
  readonly maxMinutes: number;
  /** NODE_OPTIONS of the subgraph; default: the Docker image's runtime flags. */
  readonly nodeOptions?: string | undefined;
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

/** Memory of the subgraph process at one moment, in MiB. */
export interface MemoryReading {
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
}

export interface MemoryProbeReport {
  readonly options: Omit<MemoryProbeOptions, 'log'>;
  readonly queries: number;
  readonly errors: number;
  /** The first few failures, for the report. */
  readonly failures: string[];
  readonly browseSeconds: number;
  /** Kept-page lookups (`wfs_cache_requests_total{cache="kept_pages"}`) and upstream list calls, over the run. */
  readonly keptPages: { readonly hits: number; readonly misses: number };
  /** Requests answered whole from memory or executed (`wfs_cache_requests_total{cache="whole_answers"}`), over the run: a read repeated within the window is answered whole, and makes no kept-page lookup. */
  readonly wholeAnswers: { readonly hits: number; readonly misses: number };
  readonly upstreamCalls: number;
  readonly before: MemoryReading;
  /** Highest readings during the browse; `rssMiB` is the kernel's high-water mark (VmHWM) when readable. */
  readonly peak: MemoryReading;
  readonly afterBrowse: MemoryReading;
  readonly afterIdle: MemoryReading;
}

const MiB = 1024 * 1024;
const LIMITS = { companies: 10_000, locations: 10_000, shifts: 100_000, concurrency: 64, reads: 10 };

export async function runMemoryProbe(options: MemoryProbeOptions): Promise<MemoryProbeReport> {
  const log = options.log ?? (() => undefined);
  const until = Date.now() + options.maxMinutes * 60_000;
  const checkTime = () => {
    if (Date.now() > until) throw new Error(`the probe ran past its limit of ${options.maxMinutes} minutes`);
  };
  log(`generating ${options.companies} companies of ${options.locations} locations and ${options.shifts} shifts`);
  const tenants = generatedTenants(options.companies, { locations: options.locations, shifts: options.shifts });
  const emulator = await startEmulator({ tenants, host: '127.0.0.1' });
  const dir = mkdtempSync(join(tmpdir(), 'wfs-memory-probe-'));
  let server: ServerChild | undefined;
  try {
    const tenantsFile = join(dir, 'tenants.json');
    const entries = emulator.tenants.map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, scope: t.grantedScopes.join(' ') }));
    writeFileSync(tenantsFile, JSON.stringify(entries), { mode: 0o600 });
    server = await startServerProcess('subgraph', {
      authUrl: emulator.authUrl,
      tenantsFile,
      profileDir: null,
      nodeOptions: options.nodeOptions ?? DEPLOYED_NODE_OPTIONS,
      env: {
        ...(options.freshnessSeconds !== undefined && { WFS_FRESHNESS_SECONDS: String(options.freshnessSeconds) }),
        ...(options.maxRecords !== undefined && { WFS_ENTITY_INDEX_MAX_RECORDS: String(options.maxRecords) }),
        ...(options.ttlSeconds !== undefined && { WFS_ENTITY_INDEX_TTL_SECONDS: String(options.ttlSeconds) }),
      },
    });
    const url = server.url;
    const metricsUrl = url.replace(/\/graphql$/, '/metrics');
    const warmUp = await query(url, '{ __typename }', {}, {});
    if (warmUp.errors) throw new Error(`the warm-up query failed: ${JSON.stringify(warmUp.errors)}`);
    const before = await readMemory(metricsUrl);
    log(`before: RSS ${before.rssMiB} MiB, heap used ${before.heapUsedMiB} MiB`);

    // Peak readings while the browse runs (every 500 ms), plus the kernel's high-water mark.
    let peak = before;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const reading = await readMemory(metricsUrl).catch(() => undefined);
        if (reading) peak = { rssMiB: Math.max(peak.rssMiB, reading.rssMiB), heapUsedMiB: Math.max(peak.heapUsedMiB, reading.heapUsedMiB) };
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();

    const tally = { queries: 1, errors: 0, failures: [] as string[] };
    const started = performance.now();
    let next = 0;
    let browsed = 0;
    const worker = async () => {
      while (next < emulator.tenants.length) {
        checkTime();
        const tenant = emulator.tenants[next++]!;
        for (let read = 0; read < options.reads; read += 1) await browse(url, tenant, tally);
        if (++browsed % 100 === 0) log(`browsed ${browsed} companies (${tally.queries} queries, ${tally.errors} errors)`);
      }
    };
    try {
      await Promise.all(Array.from({ length: options.concurrency }, worker));
    } finally {
      sampling = false;
      await sampler;
    }
    const browseSeconds = (performance.now() - started) / 1000;
    const afterBrowse = await readMemory(metricsUrl);
    const counts = await readCounts(metricsUrl);
    const highWater = peakRssMiB(server.child.process.pid);
    peak = { rssMiB: Math.max(peak.rssMiB, afterBrowse.rssMiB, highWater ?? 0), heapUsedMiB: Math.max(peak.heapUsedMiB, afterBrowse.heapUsedMiB) };
    log(`after the browse (${browseSeconds.toFixed(1)} s): RSS ${afterBrowse.rssMiB} MiB, heap used ${afterBrowse.heapUsedMiB} MiB; idle for ${options.idleSeconds} s`);

    // The heap every 10 s of the idle time, in the progress lines: when what the indexes released is collected.
    const idleStarted = Date.now();
    const idleUntil = idleStarted + options.idleSeconds * 1000;
    let nextLog = idleStarted + 10_000;
    while (Date.now() < idleUntil) {
      checkTime();
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, Math.max(0, idleUntil - Date.now()))));
      if (Date.now() >= nextLog && Date.now() < idleUntil) {
        nextLog += 10_000;
        const reading = await readMemory(metricsUrl);
        log(`idle ${Math.round((Date.now() - idleStarted) / 1000)} s: RSS ${reading.rssMiB} MiB, heap used ${reading.heapUsedMiB} MiB`);
      }
    }
    const afterIdle = await readMemory(metricsUrl);
    const { log: _log, ...reported } = options;
    return { options: reported, queries: tally.queries, errors: tally.errors, failures: tally.failures, browseSeconds, ...counts, before, peak, afterBrowse, afterIdle };
  } finally {
    await server?.stop();
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const LOCATIONS = `query ($after: String) { locations(first: 100, after: $after) { edges { cursor node { id name } } pageInfo { hasNextPage endCursor } } }`;
const SHIFTS = `query ($after: String) { shifts(first: 100, after: $after) { nodes { id start end location { id name } } pageInfo { hasNextPage endCursor } } }`;
const FILTERED = `query ($id: ID!) { shifts(first: 20, filter: { locationId: $id }) { nodes { id start } } }`;
const ENTITIES = `query ($r: [_Any!]!) { _entities(representations: $r) { ... on Shift { id start location { name } } } }`;

interface Answer {
  data?: any;
  errors?: unknown[];
}

/** One company, as a person browsing it would: every location, 3 pages of shifts, a filter, 20 shifts by id. */
async function browse(url: string, tenant: EmulatorTenant, tally: { queries: number; errors: number; failures: string[] }): Promise<void> {
  const headers = { 'x-tenant-id': tenant.tenantId };
  const ask = async (text: string, variables: Record<string, unknown>, check: (data: any) => string | null): Promise<any> => {
    tally.queries += 1;
    let answer: Answer;
    try {
      answer = await query(url, text, variables, headers);
    } catch (error) {
      answer = { errors: [String(error)] };
    }
    const problem = answer.errors ? JSON.stringify(answer.errors).slice(0, 300) : check(answer.data);
    if (problem) {
      tally.errors += 1;
      if (tally.failures.length < 5) tally.failures.push(`${tenant.tenantId}: ${problem}`);
    }
    return answer.data;
  };

  let after: string | null = null;
  let locations = 0;
  for (let page = 0; page < 100; page += 1) {
    const data = await ask(LOCATIONS, { after }, (d) => (d?.locations ? null : 'no locations'));
    const connection = data?.locations;
    if (!connection) break;
    locations += connection.edges.length;
    if (!connection.pageInfo.hasNextPage) break;
    after = connection.pageInfo.endCursor;
  }
  if (locations !== tenant.locations.length) {
    tally.errors += 1;
    if (tally.failures.length < 5) tally.failures.push(`${tenant.tenantId}: ${locations} locations browsed, ${tenant.locations.length} expected`);
  }
  after = null;
  for (let page = 0; page < 3; page += 1) {
    const data = await ask(SHIFTS, { after }, (d) => (d?.shifts?.nodes?.every((s: any) => s.location?.name) ? null : 'a shift without its location'));
    if (!data?.shifts?.pageInfo.hasNextPage) break;
    after = data.shifts.pageInfo.endCursor;
  }
  const locationId = tenant.locations[0]?.id;
  if (locationId) await ask(FILTERED, { id: locationId }, (d) => (d?.shifts ? null : 'no filtered page'));
  const count = tenant.shifts.length;
  const ids = count === 0 ? [] : Array.from({ length: 20 }, (_, k) => tenant.shifts[Math.floor((k * count) / 20)]!.id);
  if (ids.length > 0) {
    const representations = [...new Set(ids)].map((id) => ({ __typename: 'Shift', id }));
    await ask(ENTITIES, { r: representations }, (d) => (d?._entities?.every((e: any) => e?.id) ? null : 'an entity not found'));
  }
}

async function query(url: string, text: string, variables: Record<string, unknown>, headers: Record<string, string>): Promise<Answer> {
  const response = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: text, variables }),
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
  });
  const answer = (await response.body.json()) as Answer;
  if (response.statusCode !== 200 && !answer.errors) return { errors: [`HTTP ${response.statusCode}`] };
  return answer;
}

/** Sums a counter's series whose labels include `labels` (all of them when empty). */
function counterSum(text: string, name: string, labels: string[] = []): number {
  let sum = 0;
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? ([0-9.e+-]+)$`, 'gm'))) {
    if (labels.every((label) => (match[1] ?? '').split(',').includes(label))) sum += Number(match[2]);
  }
  return sum;
}

async function readCounts(metricsUrl: string): Promise<Pick<MemoryProbeReport, 'keptPages' | 'wholeAnswers' | 'upstreamCalls'>> {
  const text = await (await request(metricsUrl)).body.text();
  return {
    keptPages: {
      hits: counterSum(text, 'wfs_cache_requests_total', ['cache="kept_pages"', 'result="hit"']),
      misses: counterSum(text, 'wfs_cache_requests_total', ['cache="kept_pages"', 'result="miss"']),
    },
    wholeAnswers: {
      hits: counterSum(text, 'wfs_cache_requests_total', ['cache="whole_answers"', 'result="hit"']),
      misses: counterSum(text, 'wfs_cache_requests_total', ['cache="whole_answers"', 'result="miss"']),
    },
    upstreamCalls: counterSum(text, 'wfs_upstream_calls_total'),
  };
}

async function readMemory(metricsUrl: string): Promise<MemoryReading> {
  const response = await request(metricsUrl);
  const text = await response.body.text();
  const value = (name: string) => {
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
    if (!match) throw new Error(`/metrics has no ${name}`);
    return Math.round((Number(match[1]) / MiB) * 10) / 10;
  };
  return { rssMiB: value('process_resident_memory_bytes'), heapUsedMiB: value('nodejs_heap_size_used_bytes') };
}

/** The report as a table. */
export function formatReport(report: MemoryProbeReport): string {
  const { options: o } = report;
  const row = (label: string, reading: MemoryReading) => `| ${label} | ${reading.rssMiB} | ${reading.heapUsedMiB} |`;
  const ratio = report.before.heapUsedMiB > 0 ? (report.afterIdle.heapUsedMiB / report.before.heapUsedMiB).toFixed(2) : 'n/a';
  return [
    `memory probe: ${o.companies} companies × (${o.locations} locations, ${o.shifts} shifts), ${o.reads} reads each, concurrency ${o.concurrency}, ` +
      `WFS_FRESHNESS_SECONDS=${o.freshnessSeconds ?? 'default'}, WFS_ENTITY_INDEX_MAX_RECORDS=${o.maxRecords ?? 'default'}, WFS_ENTITY_INDEX_TTL_SECONDS=${o.ttlSeconds ?? 'default'}, NODE_OPTIONS=${o.nodeOptions ?? DEPLOYED_NODE_OPTIONS}`,
    `${report.queries} queries in ${report.browseSeconds.toFixed(1)} s, ${report.errors} errors; ${report.upstreamCalls} upstream calls, ` +
      `kept pages ${report.keptPages.hits} hits / ${report.keptPages.misses} misses, answers kept whole ${report.wholeAnswers.hits} hits / ${report.wholeAnswers.misses} misses`,
    '',
    '| moment | RSS MiB | heap used MiB |',
    '|---|---|---|',
    row('before the browse', report.before),
    row('peak during the browse', report.peak),
    row('after the browse', report.afterBrowse),
    row(`after ${o.idleSeconds} s idle`, report.afterIdle),
    '',
    `heap used after idle / before: ${ratio}`,
    ...report.failures.map((failure) => `failure: ${failure}`),
  ].join('\n');
}

function argument(name: string, fallback: number | undefined, max: number): number | undefined {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 0 || value > max) throw new Error(`--${name} must be an integer from 0 to ${max}`);
  return value;
}

function textArgument(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? undefined : process.argv[at + 1];
}

async function main(): Promise<void> {
  const ttlSeconds = argument('ttl-seconds', undefined, 3_600);
  const freshnessSeconds = argument('freshness-seconds', undefined, 3_600);
  // Idle past the index's lifetime: the window when one is set (the TTL can only shorten it), else the TTL.
  const lifetime = freshnessSeconds ? Math.min(ttlSeconds ?? freshnessSeconds, freshnessSeconds) : (ttlSeconds ?? 30);
  const report = await runMemoryProbe({
    companies: Math.max(1, argument('companies', 1_000, LIMITS.companies)!),
    locations: Math.max(1, argument('locations', 200, LIMITS.locations)!),
    shifts: argument('shifts', 2_000, LIMITS.shifts)!,
    concurrency: Math.max(1, argument('concurrency', 8, LIMITS.concurrency)!),
    reads: Math.max(1, argument('reads', 2, LIMITS.reads)!),
    idleSeconds: argument('idle-seconds', lifetime + 10, 3_600)!,
    freshnessSeconds,
    maxRecords: argument('max-records', undefined, 100_000_000),
    ttlSeconds,
    maxMinutes: argument('max-minutes', 30, 24 * 60)!,
    nodeOptions: textArgument('node-options'),
    log: (line) => void process.stderr.write(`probe: ${line}\n`),
  });
  process.stdout.write(`${formatReport(report)}\n`);
  process.exitCode = report.errors === 0 ? 0 : 1;
}

if (process.argv.some((arg) => arg.endsWith('memoryProbe.ts'))) {
  main().catch((error: unknown) => {
    process.stderr.write(`memory probe: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
