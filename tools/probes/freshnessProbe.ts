/**
 * `npm run probe:freshness`: how long an upstream edit takes to show, measured from
 * outside (docs/caching.md, "Measured"). The upstream emulator runs in this process and
 * is edited here; the built subgraph (`node dist/index.js` with the Docker image's
 * runtime flags) and Hive Gateway (the `hive-gateway` CLI with the shipped
 * router/gateway.config.ts, response cache and /invalidation endpoint on) run as child
 * processes. Each company's list is read without pause by two readers, one asking the
 * subgraph (a) and one asking through the gateway (b). Per edit and reader: until it
 * showed (the sending of the earliest query whose answer shows it), when that answer
 * arrived, and when the last answer without it arrived (EditOutcome below).
 *
 *   1. window:      WFS_FRESHNESS_SECONDS=5, no subscription: shown p99 <= the window.
 *   2. invalidated: window 300, a live poll every --poll-interval s (one `shiftChanges`
 *                   subscription per company keeps the list polled), the subgraph POSTing
 *                   to the gateway's /invalidation: shown p99 <= one poll interval + 1 s.
 *   3. stale:       window --stale-window, the same polls, the invalidation endpoint down
 *                   (a closed port): the last stale answer, <= the window.
 *
 *   npm run probe:freshness -- [--edits 100] [--companies 3] [--query-ms 50]
 *                              [--freshness 5] [--long-window 300] [--poll-interval 1]
 *                              [--stale-window 60] [--stale-edits 3]
 *                              [--subscribe true|false] (scenarios 2 and 3: the subscription
 *                                that keeps each list polled; off, only lists polled for
 *                                other reasons are)
 *                              [--only window,invalidated,stale] [--max-minutes 20]
 *
 * Readers are open-loop: a query leaves every --query-ms whether or not the ones before
 * it were answered, so a slow answer does not hide the moments after it (no coordinated
 * omission); `shown` is at most one query interval late. Before each edit a company
 * waits a random time within the cycle that renews what is kept (the window, or the poll
 * interval when polls invalidate), so edits fall at every age of a kept answer.
 *
 * Everything binds 127.0.0.1; the run stops itself after --max-minutes, and the children
 * are stopped however the run ends. Exit code 1 when a scenario misses its bound, an edit
 * never shows, or a query fails.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import WebSocket from 'ws';
import { DEPLOYED_NODE_OPTIONS, repoRoot } from '../../bench/settings';
import { freePort, startChild, startServerProcess, type Child, type ServerChild } from '../../bench/processes';
import { generatedTenants, startEmulator, type Emulator, type EmulatorTenant } from '../emulator';
import { scrapeTotal } from '../../test/helpers/metrics';

// ---------------------------------------------------------------------------------------
// The measurement (also what test/integration/caching.test.ts runs against a subgraph).

/** Where a reader sends its queries: a GraphQL endpoint and the headers that name the company. */
export interface FreshnessTarget {
  readonly name: string;
  readonly url: string;
  /** Headers for every query, besides `x-tenant-id`. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** One answer a reader got: when its query left and when it came back, and the edited field's value then. */
export interface ReaderAnswer {
  readonly sentAt: number;
  readonly receivedAt: number;
  /** The tracked shift's `end` in ms since the epoch; null when the answer had no such shift. */
  readonly value: number | null;
}

/** What one reader saw of one edit, in ms from the edit. */
export interface EditOutcome {
  readonly editedAt: number;
  /**
   * Until the edit showed: when the earliest query whose answer showed it was sent (0
   * when it was sent before the edit: its read came after). The query before it did not
   * show it, so this is at most one query interval late. Null: not shown within the
   * edit's timeout.
   */
  shownMs: number | null;
  /** When the first answer that showed it arrived (shownMs plus one answer's time, or less). */
  answeredMs: number | null;
  /** When the last answer that did not show it arrived, of the queries sent after the edit (0: none). */
  staleMs: number;
  /** Answers, asked after the edit, that did not show it although an earlier one had. */
  flaps: number;
}

/** A new outcome, nothing seen yet, for an edit made at `editedAt`. */
export function pendingEdit(editedAt: number): EditOutcome {
  return { editedAt, shownMs: null, answeredMs: null, staleMs: 0, flaps: 0 };
}

/**
 * Files one answer under the edit it may show. An answer that arrived before the edit
 * says nothing of it; one asked before the edit and answered after it counts only when
 * it shows the edit (its read came after the edit: the edit was visible to it); one
 * asked after the edit that does not show it is a stale answer.
 */
export function observe(outcome: EditOutcome, expected: number, answer: ReaderAnswer): void {
  if (answer.receivedAt < outcome.editedAt) return;
  if (answer.value === expected) {
    const sent = Math.max(0, answer.sentAt - outcome.editedAt);
    outcome.shownMs = Math.min(outcome.shownMs ?? sent, sent);
    outcome.answeredMs ??= answer.receivedAt - outcome.editedAt;
    return;
  }
  if (answer.sentAt < outcome.editedAt) return;
  outcome.staleMs = Math.max(outcome.staleMs, answer.receivedAt - outcome.editedAt);
  if (outcome.answeredMs !== null) outcome.flaps += 1;
}

/** Nearest-rank percentiles of a set of latencies (ms), rounded to the ms. */
export interface Summary {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** The nearest-rank percentile: the smallest value with at least p % of the values at or below it. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function summarize(values: readonly number[]): Summary {
  const at = (p: number) => Math.round(percentile(values, p));
  return { count: values.length, p50: at(50), p90: at(90), p99: at(99), max: at(100) };
}

/** One reader's results over a run. */
export interface TargetResult {
  readonly target: string;
  readonly edits: number;
  /** Edits no answer showed within the timeout. */
  readonly unshown: number;
  /** Until each edit showed (EditOutcome.shownMs), over the edits that did. */
  readonly shownMs: Summary;
  /** The latest first answer that showed an edit arrived. */
  readonly answeredMaxMs: number;
  /** When the last stale answer arrived, per edit (an edit not shown counts its timeout). */
  readonly staleMs: Summary;
  readonly flaps: number;
  readonly queries: number;
  readonly errors: number;
  /** Ticks when a reader already had MAX_IN_FLIGHT queries unanswered and sent none. */
  readonly skipped: number;
  readonly failures: readonly string[];
}

export interface MeasureOptions {
  readonly tenants: readonly EmulatorTenant[];
  readonly targets: readonly FreshnessTarget[];
  /** Edits in all, spread over the companies (each edits its own, one after another). */
  readonly edits: number;
  /** Each edit waits a random time in [0, cycleMs) first. */
  readonly cycleMs: number;
  /** A reader sends a query this often. */
  readonly queryIntervalMs: number;
  /** An edit no answer showed within this long counts as not shown. */
  readonly timeoutMs: number;
  /** Throws past this moment (performance.now()). */
  readonly deadline?: number;
  readonly random?: () => number;
}

/** A reader's unanswered queries at most; past it a tick sends nothing (and is counted). */
const MAX_IN_FLIGHT = 20;
/** The shift each company's edits change, and the query that reads it (a rota screen's first page). */
const QUERY = '{ shifts(first: 10) { nodes { id end } } }';

/**
 * Edits the first shift of each tenant (its `end` a minute later each time) and reads it
 * through every target until every target has shown each edit. The emulator is the one
 * that serves `tenants` (this process edits its records in place).
 */
export async function measureFreshness(options: MeasureOptions): Promise<TargetResult[]> {
  const random = options.random ?? Math.random;
  const results = options.targets.map((target) => ({ target, outcomes: [] as EditOutcome[], queries: 0, errors: 0, skipped: 0, failures: [] as string[] }));
  const companies = options.tenants.map((tenant) => {
    const shift = tenant.shifts[0];
    if (!shift) throw new Error(`tenant ${tenant.tenantId} has no shift to edit`);
    return { tenant, shift, expected: Date.parse(shift.end), current: null as EditOutcome[] | null };
  });

  let stopped = false;
  const readers = companies.flatMap((company) =>
    results.map((result, index) => {
      let inFlight = 0;
      let answered = 0;
      const ask = async () => {
        const sentAt = performance.now();
        try {
          const response = await request(result.target.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-tenant-id': company.tenant.tenantId, ...result.target.headers },
            body: JSON.stringify({ query: QUERY }),
          });
          const body = (await response.body.json()) as { data?: any; errors?: unknown[] };
          const receivedAt = performance.now();
          result.queries += 1;
          if (response.statusCode !== 200 || body.errors || !body.data?.shifts) throw new Error(`HTTP ${response.statusCode}: ${JSON.stringify(body).slice(0, 300)}`);
          const node = (body.data.shifts.nodes as Array<{ id: string; end: string }>).find((n) => n.id === company.shift.id);
          answered += 1;
          const outcome = company.current?.[index];
          if (outcome) observe(outcome, company.expected, { sentAt, receivedAt, value: node ? Date.parse(node.end) : null });
        } catch (error) {
          if (stopped) return;
          result.errors += 1;
          if (result.failures.length < 5) result.failures.push(`${result.target.name}, ${company.tenant.tenantId}: ${error instanceof Error ? error.message : String(error)}`);
        }
      };
      const timer = setInterval(() => {
        if (inFlight >= MAX_IN_FLIGHT) {
          result.skipped += 1;
          return;
        }
        inFlight += 1;
        void ask().finally(() => (inFlight -= 1));
      }, options.queryIntervalMs);
      return { timer, answered: () => answered, idle: () => inFlight === 0 };
    }),
  );

  const checkDeadline = () => {
    if (options.deadline !== undefined && performance.now() > options.deadline) throw new Error('the probe ran past its time limit');
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  try {
    // Warm: every reader has had an answer (what a kept answer needs to exist at all).
    while (!readers.every((reader) => reader.answered() > 0)) {
      checkDeadline();
      if (results.some((result) => result.errors > 0)) throw new Error(`a query failed before the first edit: ${results.flatMap((r) => r.failures).join('; ')}`);
      await sleep(20);
    }
    await Promise.all(
      companies.map(async (company, c) => {
        const mine = Math.floor(options.edits / companies.length) + (c < options.edits % companies.length ? 1 : 0);
        for (let k = 0; k < mine; k++) {
          await sleep(random() * options.cycleMs);
          checkDeadline();
          company.expected += 60_000;
          company.shift.end = new Date(company.expected).toISOString();
          const editedAt = performance.now();
          const outcomes = results.map(() => pendingEdit(editedAt));
          company.current = outcomes;
          results.forEach((result, index) => result.outcomes.push(outcomes[index]!));
          while (outcomes.some((outcome) => outcome.shownMs === null) && performance.now() - editedAt < options.timeoutMs) {
            checkDeadline();
            await sleep(5);
          }
        }
      }),
    );
  } finally {
    stopped = true;
    for (const reader of readers) clearInterval(reader.timer);
    const settled = performance.now() + 5_000;
    while (!readers.every((reader) => reader.idle()) && performance.now() < settled) await sleep(20);
  }
  return results.map((result) => {
    const shown = result.outcomes.filter((outcome) => outcome.shownMs !== null);
    return {
      target: result.target.name,
      edits: result.outcomes.length,
      unshown: result.outcomes.length - shown.length,
      shownMs: summarize(shown.map((outcome) => outcome.shownMs!)),
      answeredMaxMs: Math.round(Math.max(0, ...shown.map((outcome) => outcome.answeredMs!))),
      staleMs: summarize(result.outcomes.map((outcome) => (outcome.shownMs === null ? options.timeoutMs : outcome.staleMs))),
      flaps: result.outcomes.reduce((sum, outcome) => sum + outcome.flaps, 0),
      queries: result.queries,
      errors: result.errors,
      skipped: result.skipped,
      failures: result.failures,
    };
  });
}

// ---------------------------------------------------------------------------------------
// The scenarios: the processes each one runs, and its bound.

export interface FreshnessProbeOptions {
  readonly edits: number;
  readonly companies: number;
  readonly queryIntervalMs: number;
  /** Scenario 1's window. */
  readonly freshnessSeconds: number;
  /** Scenario 2's window. */
  readonly longWindowSeconds: number;
  readonly pollIntervalSeconds: number;
  /** Scenario 3's window and edits. */
  readonly staleWindowSeconds: number;
  readonly staleEdits: number;
  /** Scenarios 2 and 3: a `shiftChanges` subscription per company, which keeps its list polled. */
  readonly subscribe: boolean;
  readonly only: ReadonlySet<string>;
  readonly maxMinutes: number;
  readonly log?: (line: string) => void;
}

interface Scenario {
  readonly name: 'window' | 'invalidated' | 'stale';
  readonly freshnessSeconds: number;
  readonly invalidation: 'none' | 'gateway' | 'down';
  readonly polled: boolean;
  readonly edits: number;
  readonly cycleMs: number;
  /** The bound on each target's p99 latency, or (`stale`) on the longest stale answer. */
  readonly boundMs: number;
  readonly bounds: 'p99' | 'stale';
}

export interface ScenarioReport {
  readonly scenario: string;
  readonly settings: Record<string, string | number | boolean>;
  readonly boundMs: number;
  readonly bounds: 'p99' | 'stale';
  readonly targets: readonly TargetResult[];
  readonly invalidations: Record<string, number>;
  readonly pass: boolean;
}

const ROUTER_SECRET = 'freshness-probe-router-secret-0123456789abcdef';
const INVALIDATION_KEY = 'freshness-probe-invalidation-key-0123456789';
const SUBSCRIPTION = 'subscription { shiftChanges { kind nodeId } }';

function scenarios(options: FreshnessProbeOptions): Scenario[] {
  const poll = options.pollIntervalSeconds;
  const all: Scenario[] = [
    { name: 'window', freshnessSeconds: options.freshnessSeconds, invalidation: 'none', polled: false, edits: options.edits, cycleMs: options.freshnessSeconds * 1000, boundMs: options.freshnessSeconds * 1000, bounds: 'p99' },
    { name: 'invalidated', freshnessSeconds: options.longWindowSeconds, invalidation: 'gateway', polled: options.subscribe, edits: options.edits, cycleMs: poll * 1000, boundMs: poll * 1000 + 1000, bounds: 'p99' },
    { name: 'stale', freshnessSeconds: options.staleWindowSeconds, invalidation: 'down', polled: options.subscribe, edits: options.staleEdits, cycleMs: options.staleWindowSeconds * 1000, boundMs: options.staleWindowSeconds * 1000, bounds: 'stale' },
  ];
  return all.filter((scenario) => options.only.has(scenario.name));
}

function pass(scenario: Scenario, targets: readonly TargetResult[]): boolean {
  return targets.every(
    (t) => t.unshown === 0 && t.errors === 0 && t.edits > 0 && (scenario.bounds === 'p99' ? t.shownMs.p99 <= scenario.boundMs : t.staleMs.max <= scenario.boundMs),
  );
}

/** Hive Gateway's CLI with the shipped config, on loopback; resolves once it answers a query. */
async function startGateway(port: number, subgraphUrl: string): Promise<Child> {
  const bin = join(dirname(require.resolve('@graphql-hive/gateway/package.json')), 'dist', 'bin.js');
  const root = repoRoot();
  const child = startChild(
    'hive-gateway',
    bin,
    ['supergraph', join(root, 'supergraph.graphql'), '-c', join(root, 'router', 'gateway.config.ts'), '-h', '127.0.0.1', '-p', String(port), '--fork', '1'],
    { PATH: process.env.PATH, NODE_ENV: 'production', WFS_ROUTER_SECRET: ROUTER_SECRET, SUBGRAPH_WFS_URL: subgraphUrl, WFS_CACHE_INVALIDATION_KEY: INVALIDATION_KEY },
  );
  const url = `http://127.0.0.1:${port}/graphql`;
  const until = performance.now() + 60_000;
  for (;;) {
    if (child.process.exitCode !== null) throw new Error(`hive-gateway exited:\n${child.output()}`);
    try {
      // The gateway loads the supergraph on its first request: answered, it is ready.
      const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': 'warm-up' }, body: '{"query":"{ __typename }"}' });
      const body = (await response.body.json()) as { data?: unknown };
      if (response.statusCode === 200 && body.data) return child;
    } catch {
      // not listening yet
    }
    if (performance.now() > until) throw new Error(`hive-gateway did not answer within 60 s:\n${child.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** One graphql-ws subscription to `shiftChanges` for `tenantId`, straight to the subgraph (as the gateway would hold one). */
async function subscribe(url: string, tenantId: string): Promise<WebSocket> {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws', { headers: { 'router-authorization': ROUTER_SECRET } });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'connection_ack') resolve();
      else if (message.type === 'ping') socket.send('{"type":"pong"}');
    });
    socket.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'x-tenant-id': tenantId } } }));
  });
  socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION } }));
  return socket;
}

async function waitUntil(condition: () => Promise<boolean>, what: string, deadline: number): Promise<void> {
  const until = Math.min(deadline, performance.now() + 60_000);
  while (!(await condition())) {
    if (performance.now() > until) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function runScenario(scenario: Scenario, options: FreshnessProbeOptions, deadline: number): Promise<ScenarioReport> {
  const tenants = generatedTenants(options.companies, { locations: 3, shifts: 20 });
  const emulator: Emulator = await startEmulator({ tenants, host: '127.0.0.1' });
  const dir = mkdtempSync(join(tmpdir(), 'wfs-freshness-probe-'));
  let server: ServerChild | undefined;
  let gateway: Child | undefined;
  const sockets: WebSocket[] = [];
  try {
    const tenantsFile = join(dir, 'tenants.json');
    writeFileSync(tenantsFile, JSON.stringify(emulator.tenants.map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, scope: t.grantedScopes.join(' ') }))), { mode: 0o600 });
    // The gateway's port first: the subgraph is told where to POST invalidations. For
    // `down`, a port nothing listens on (taken and released again).
    const gatewayPort = await freePort();
    const invalidationPort = scenario.invalidation === 'down' ? await freePort() : gatewayPort;
    const settings = {
      WFS_FRESHNESS_SECONDS: String(scenario.freshnessSeconds),
      WFS_POLL_INTERVAL_SECONDS: String(options.pollIntervalSeconds),
      WFS_ROUTER_SECRET: ROUTER_SECRET,
      ...(scenario.invalidation !== 'none' && { WFS_CACHE_INVALIDATION_URLS: `http://127.0.0.1:${invalidationPort}/invalidation`, WFS_CACHE_INVALIDATION_KEY: INVALIDATION_KEY }),
    };
    server = await startServerProcess('subgraph', { authUrl: emulator.authUrl, tenantsFile, profileDir: null, nodeOptions: DEPLOYED_NODE_OPTIONS, env: settings });
    gateway = await startGateway(gatewayPort, server.url);
    const url = server.url;
    if (scenario.polled) {
      for (const tenant of tenants) sockets.push(await subscribe(url, tenant.tenantId));
      await waitUntil(async () => (await scrapeTotal(url, 'wfs_live_subscriptions')) === tenants.length, 'the subscriptions', deadline);
      await waitUntil(async () => (await scrapeTotal(url, 'wfs_live_polls_total', { outcome: 'ok' })) >= tenants.length, "every company's first poll", deadline);
    }
    options.log?.(`${scenario.name}: ${scenario.edits} edits over ${tenants.length} companies`);
    const targets = await measureFreshness({
      tenants,
      targets: [
        { name: 'subgraph', url, headers: { 'router-authorization': ROUTER_SECRET } },
        { name: 'hive-gateway', url: `http://127.0.0.1:${gatewayPort}/graphql` },
      ],
      edits: scenario.edits,
      cycleMs: scenario.cycleMs,
      queryIntervalMs: options.queryIntervalMs,
      timeoutMs: scenario.bounds === 'stale' ? scenario.boundMs + 15_000 : Math.max(30_000, scenario.boundMs * 3),
      deadline,
    });
    const outcome = (name: string) => scrapeTotal(url, 'wfs_cache_invalidations_total', { outcome: name });
    const invalidations = { sent: await outcome('sent'), failed: await outcome('failed'), rejected: await outcome('rejected') };
    return {
      scenario: scenario.name,
      settings: { ...settings, WFS_ROUTER_SECRET: '(set)', ...(settings.WFS_CACHE_INVALIDATION_KEY && { WFS_CACHE_INVALIDATION_KEY: '(set)' }), subscribed: scenario.polled, companies: tenants.length, queryIntervalMs: options.queryIntervalMs },
      boundMs: scenario.boundMs,
      bounds: scenario.bounds,
      targets,
      invalidations,
      pass: pass(scenario, targets),
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    await gateway?.stop();
    await server?.stop();
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runFreshnessProbe(options: FreshnessProbeOptions): Promise<ScenarioReport[]> {
  const deadline = performance.now() + options.maxMinutes * 60_000;
  const reports: ScenarioReport[] = [];
  for (const scenario of scenarios(options)) {
    options.log?.(`${scenario.name}…`);
    const report = await runScenario(scenario, options, deadline);
    reports.push(report);
    options.log?.(`${scenario.name}: ${report.pass ? 'pass' : 'FAIL'}`);
  }
  return reports;
}

/** One scenario as a table: a row per target. */
export function formatScenario(report: ScenarioReport): string {
  const ms = (value: number) => (Number.isNaN(value) ? '-' : String(value));
  const bound = report.bounds === 'p99' ? `shown p99 <= ${report.boundMs} ms` : `the last stale answer <= ${report.boundMs} ms`;
  const settings = Object.entries(report.settings).map(([name, value]) => `${name}=${value}`).join(' ');
  return [
    `${report.scenario}: ${report.pass ? 'PASS' : 'FAIL'} (${bound}); ${settings}`,
    `invalidations: ${Object.entries(report.invalidations).map(([name, value]) => `${name} ${value}`).join(', ')}`,
    '',
    '| target | edits | shown p50 ms | p90 | p99 | max | its answer, max ms | last stale answer p99 ms | max | not shown | flaps | queries | errors | skipped ticks |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...report.targets.map(
      (t) =>
        `| ${t.target} | ${t.edits} | ${ms(t.shownMs.p50)} | ${ms(t.shownMs.p90)} | ${ms(t.shownMs.p99)} | ${ms(t.shownMs.max)} | ${t.answeredMaxMs} | ${t.staleMs.p99} | ${t.staleMs.max} | ${t.unshown} | ${t.flaps} | ${t.queries} | ${t.errors} | ${t.skipped} |`,
    ),
    ...report.targets.flatMap((t) => t.failures.map((failure) => `failure: ${failure}`)),
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      edits: { type: 'string', default: '100' },
      companies: { type: 'string', default: '3' },
      'query-ms': { type: 'string', default: '50' },
      freshness: { type: 'string', default: '5' },
      'long-window': { type: 'string', default: '300' },
      'poll-interval': { type: 'string', default: '1' },
      'stale-window': { type: 'string', default: '60' },
      'stale-edits': { type: 'string', default: '3' },
      subscribe: { type: 'string', default: 'true' },
      only: { type: 'string', default: 'window,invalidated,stale' },
      'max-minutes': { type: 'string', default: '20' },
    },
  });
  const integer = (name: keyof typeof values, min: number, max: number): number => {
    const value = Number(values[name]);
    if (!Number.isInteger(value) || value < min || value > max) throw new Error(`--${name} must be an integer from ${min} to ${max}`);
    return value;
  };
  if (values.subscribe !== 'true' && values.subscribe !== 'false') throw new Error('--subscribe must be true or false');
  const reports = await runFreshnessProbe({
    edits: integer('edits', 1, 100_000),
    companies: integer('companies', 1, 100),
    queryIntervalMs: integer('query-ms', 5, 10_000),
    freshnessSeconds: integer('freshness', 1, 3_600),
    longWindowSeconds: integer('long-window', 1, 3_600),
    pollIntervalSeconds: integer('poll-interval', 1, 3_600),
    staleWindowSeconds: integer('stale-window', 1, 3_600),
    staleEdits: integer('stale-edits', 1, 1_000),
    subscribe: values.subscribe === 'true',
    only: new Set(values.only!.split(',')),
    maxMinutes: integer('max-minutes', 1, 24 * 60),
    log: (line) => void process.stderr.write(`freshness probe: ${line}\n`),
  });
  process.stdout.write(`${reports.map(formatScenario).join('\n\n')}\n`);
  process.exitCode = reports.every((report) => report.pass) ? 0 : 1;
}

if (process.argv.some((arg) => arg.endsWith('freshnessProbe.ts'))) {
  // Ctrl-C or a kill: exit through 'exit', where bench/processes.ts stops every child.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(1));
  main().catch((error: unknown) => {
    process.stderr.write(`freshness probe: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
