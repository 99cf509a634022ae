import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Counter } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { collect, liveClient } from '../helpers/liveClient';
import { seriesSelectors, type SeriesSelector } from '../helpers/promql';
import { editShiftEnd } from '../helpers/relayLive';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { startEmulator } from '../../tools/emulator';
import { createLogger } from '../../src/observability/logger';
import { startServer } from '../../src/server';
import { TOKEN_PATH } from '../../src/upstream/token/tokenEndpoint';
import { parseSamples, scrapeText, scrapeTotal } from '../helpers/metrics';
import { errorCodes, startTestSubgraph, writeTenantsFile, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * The shipped dashboard and alert rules only help if they query what the subgraph
 * exposes, and only what it exposes: every metric name they use must appear at
 * `/metrics` after a short load; every series selector must carry the job (and, in
 * the dashboard, namespace) matchers, so a Prometheus shared with other services
 * shows and alerts on ours alone; the PrometheusRule must be what the rules' build
 * step writes; and the rules must pass promtool's own check and unit tests (Debian
 * package `prometheus`; scripts/test.sh installs it, so a missing promtool fails here
 * rather than skipping).
 */

const repoRoot = path.resolve(__dirname, '../..');
const prometheusDir = path.join(repoRoot, 'deploy', 'prometheus');
const read = (...parts: string[]) => readFileSync(path.join(repoRoot, ...parts), 'utf8');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: Array<{ name: string; rules: Rule[] }>;
}
interface Dashboard {
  panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
  templating: { list: Array<{ name: string; type: string; query?: unknown; allValue?: string }> };
}

const rules = parseYaml(read('deploy', 'prometheus', 'alerts.yaml')) as RuleFile;
const dashboard = JSON.parse(read('deploy', 'grafana', 'wfs-subgraph.json')) as Dashboard;
const ruleExprs = rules.groups.flatMap((group) => group.rules.map((rule) => ({ where: `alert ${rule.alert ?? rule.record}`, expr: rule.expr })));
const panelExprs = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}"`, expr: target.expr })));

const used = new Map<string, string>();
for (const { where, expr } of [...ruleExprs, ...panelExprs]) for (const { name } of seriesSelectors(expr)) if (name) used.set(name, where);

/** The Service a ServiceMonitor scrapes gives the job label its name; the rules select it. */
const serviceName = (parseYaml(read('deploy', 'k8s', 'service.yaml')) as { metadata: { name: string } }).metadata.name;

/** Selectors lacking one of the required matchers, as "where: selector (missing ...)". */
function unselected(exprs: Array<{ where: string; expr: string }>, required: (selector: SeriesSelector) => string[]): string[] {
  return exprs.flatMap(({ where, expr }) =>
    seriesSelectors(expr).flatMap((selector) => {
      const missing = required(selector);
      return missing.length > 0 ? [`${where}: ${selector.text} (missing ${missing.join(', ')})`] : [];
    }),
  );
}
const has = (selector: SeriesSelector, label: string, op: string, value: string) =>
  selector.matchers.some((matcher) => matcher.label === label && matcher.op === op && matcher.value === value);
/** The dashboard's rule: the job and namespace variables in every selector. */
const dashboardMissing = (selector: SeriesSelector) =>
  [['job', '$job'], ['namespace', '$namespace']].filter(([label, value]) => !has(selector, label!, '=~', value!)).map(([label, value]) => `${label}=~"${value}"`);
/** The rules' rule: our job in every selector (a rule has no namespace to pick; ratios group by it). */
const ruleMissing = (selector: SeriesSelector) => (has(selector, 'job', '=', serviceName) ? [] : [`job="${serviceName}"`]);

/**
 * docs/operations.md's alert table, as alert name -> severity: the rows under its
 * `| alert | fires when | severity |` header, each first cell one alert name in backticks.
 */
function documentedAlerts(markdown: string): Map<string, string> {
  const lines = markdown.split('\n');
  const header = lines.findIndex((line) => /^\|\s*alert\s*\|\s*fires when\s*\|\s*severity\s*\|$/.test(line.trim()));
  if (header < 0) throw new Error('no "| alert | fires when | severity |" table');
  const rows = new Map<string, string>();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split('|').map((cell) => cell.trim());
    const name = /^`(\w+)`$/.exec(cells[1] ?? '')?.[1];
    if (!name) throw new Error(`an alert table row without one alert name: ${line}`);
    rows.set(name, cells[cells.length - 2] ?? '');
  }
  return rows;
}

/** The rules file's alerts, as name -> severity. */
const ruleAlerts = new Map(rules.groups.flatMap((group) => group.rules.flatMap((rule) => (rule.alert ? [[rule.alert, rule.labels?.['severity'] ?? ''] as const] : []))));

describe('dashboard and alert rules', () => {
  let redis: RedisTestServer;
  let subgraph: TestSubgraph;
  beforeAll(async () => {
    redis = await startRedisServer();
    subgraph = await startTestSubgraph(
      { maxPageSize: 5 },
      { WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: 'dashboards-redis-record-key-0123456789abcdef' },
      { live: { pollIntervalMs: 100 } },
    );
  });
  afterAll(async () => {
    await subgraph?.close();
    await redis.stop();
  });

  it('use only metric names that /metrics exposes after a short load', async () => {
    const tenant = { 'x-tenant-id': subgraph.emulator.tenants[1]!.tenantId };
    expect(errorCodes(await subgraph.query('query Rota { shifts(first: 8) { nodes { id location { name } } } locations(first: 3) { nodes { id } } }', {}, tenant))).toEqual([]);
    subgraph.emulator.injectFault({ endpoint: 'locations', status: 503, times: 2 });
    expect(errorCodes(await subgraph.query('{ locations(first: 3) { nodes { id } } }', {}, tenant))).toEqual(['UPSTREAM_UNAVAILABLE']);

    // Live updates: a subscription that receives a change, and one refused (a query on the socket).
    const socket = liveClient(subgraph.server.url, tenant);
    try {
      const changes = collect(socket, 'subscription { shiftChanges { kind nodeId } }');
      const refused = collect(socket, '{ locations(first: 1) { nodes { id } } }');
      // A refusal is a `next` with the error, then `complete` (docs/live.md, as it survives a gateway).
      await waitFor(() => subgraph.server.live.subscriptions === 1 && refused.completed && (refused.results[0]?.errors?.length ?? 0) > 0, 'one subscription open, one refused');
      const polls = subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>;
      await waitFor(async () => (await counterTotal(polls, { outcome: 'ok' })) >= 1, 'the baseline poll');
      editShiftEnd(subgraph.emulator.tenants[1]!.shifts[0]!);
      await waitFor(() => changes.results.length > 0, 'a live change');

      // A sample, not just a `# TYPE` line: a panel over a family with no series shows nothing.
      const exposed = new Set(parseSamples(await scrapeText(subgraph.server.url)).map((sample) => sample.name));
      expect(used.size).toBeGreaterThan(10);
      const missing = [...used].filter(([name]) => !exposed.has(name)).map(([name, where]) => `${name} (${where})`);
      expect(missing).toEqual([]);
      expect([...used.keys()].filter((name) => name.startsWith('wfs_live_')).length).toBeGreaterThanOrEqual(10);
    } finally {
      await socket.dispose();
    }
  });

  it('select every dashboard series by the job and namespace variables, which the dashboard defines', () => {
    expect(panelExprs.length).toBeGreaterThan(15);
    expect(unselected(panelExprs, dashboardMissing)).toEqual([]);
    const variables = Object.fromEntries(dashboard.templating.list.map((variable) => [variable.name, variable]));
    // Both list what exposes our own readiness gauge only; "All" namespaces also matches series without the label.
    expect(JSON.stringify(variables['job']?.query)).toMatch(/label_values\(wfs_ready, job\)/);
    expect(JSON.stringify(variables['namespace']?.query)).toMatch(/label_values\(wfs_ready\{job=~\\"\$job\\"\}, namespace\)/);
    expect(variables['namespace']?.allValue).toBe('.*');
  });

  it("are listed in docs/operations.md's alert table, every alert of the rules file and no other, each with its severity", () => {
    const documented = documentedAlerts(read('docs', 'operations.md'));
    expect(ruleAlerts.size).toBeGreaterThan(10);
    expect(Object.fromEntries([...documented].sort())).toEqual(Object.fromEntries([...ruleAlerts].sort()));
  });

  it('would see an alert missing from the table, one the rules do not have, and a wrong severity (the check can fail)', () => {
    const table = (rows: string[]) => ['| alert | fires when | severity |', '|---|---|---|', ...rows, '', 'After the table.'].join('\n');
    const doctored = documentedAlerts(table(['| `WfsSubgraphErrorRateHigh` | errors | ticket |', '| `WfsSubgraphGone` | never | page |']));
    expect([...doctored]).toEqual([
      ['WfsSubgraphErrorRateHigh', 'ticket'],
      ['WfsSubgraphGone', 'page'],
    ]);
    expect(Object.fromEntries(doctored)).not.toEqual(Object.fromEntries(ruleAlerts));
    expect(() => documentedAlerts(table(['| `WfsSubgraphLatencyBudgetBurnFast` / `…Slow` | burns | page / ticket |']))).toThrow(/without one alert name/);
  });

  it('select every alert rule series by our job', () => {
    expect(unselected(ruleExprs, ruleMissing)).toEqual([]);
  });

  it('would report an unselected series, wherever it sits in an expression (the check sees them)', () => {
    const sneaky = [
      { where: 'memory', expr: 'sum by (instance) (process_resident_memory_bytes)' },
      { where: 'flapping', expr: 'changes(wfs_ready{job="wfs-subgraph"}[15m]) > 2 or changes(process_start_time_seconds[15m]) > 2' },
      { where: 'subquery', expr: 'max_over_time(rate(nodejs_eventloop_lag_p99_seconds{job=~"$job"}[$__rate_interval])[1h:])' },
    ];
    expect(unselected(sneaky, ruleMissing)).toEqual([
      'memory: process_resident_memory_bytes (missing job="wfs-subgraph")',
      'flapping: process_start_time_seconds (missing job="wfs-subgraph")',
      'subquery: nodejs_eventloop_lag_p99_seconds{job=~"$job"} (missing job="wfs-subgraph")',
    ]);
    expect(unselected(sneaky.slice(2), dashboardMissing)).toEqual(['subquery: nodejs_eventloop_lag_p99_seconds{job=~"$job"} (missing namespace=~"$namespace")']);
    expect(() => seriesSelectors('sum(rate(wfs_ready[5m])')).toThrow(/not PromQL/);
  });

  describe('the PrometheusRule build step (scripts/prometheusrule.mjs)', () => {
    const node = path.join(repoRoot, 'node_modules', '.bin', 'node');
    const build = (...args: string[]) => {
      const out = mkdtempSync(path.join(tmpdir(), 'wfs-prometheusrule-'));
      try {
        execFileSync(node, [path.join(repoRoot, 'scripts', 'prometheusrule.mjs'), '--out-dir', out, '--rules-out', path.join(out, 'alerts.yaml'), ...args]);
        return { prometheusRule: readFileSync(path.join(out, 'prometheusrule.yaml'), 'utf8'), alerts: readFileSync(path.join(out, 'alerts.yaml'), 'utf8') };
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    };

    it("wrote the committed PrometheusRule of the optional kustomize component, with alerts.yaml's groups", () => {
      const committed = read('deploy', 'k8s', 'components', 'alerts', 'prometheusrule.yaml');
      expect(build().prometheusRule).toBe(committed);
      const prometheusRule = parseYaml(committed) as { apiVersion: string; kind: string; spec: RuleFile };
      expect(prometheusRule).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
      expect(prometheusRule.spec.groups).toEqual(rules.groups);
      const component = parseYaml(read('deploy', 'k8s', 'components', 'alerts', 'kustomization.yaml')) as { kind: string; resources: string[] };
      expect(component).toEqual({ apiVersion: 'kustomize.config.k8s.io/v1alpha1', kind: 'Component', resources: ['prometheusrule.yaml'] });
    });

    it('gives every alert a runbook URL under the base it is given (the anchors: test/unit/docs.test.ts)', () => {
      const base = 'https://wiki.example.com/teams/scheduling/wfs-subgraph';
      for (const built of Object.values(build('--runbook-base', base))) {
        const groups = ('spec' in (parseYaml(built) as object) ? (parseYaml(built) as { spec: RuleFile }).spec : (parseYaml(built) as RuleFile)).groups;
        for (const rule of groups.flatMap((group) => group.rules)) {
          const url = rule.annotations?.['runbook_url'] ?? '';
          expect({ alert: rule.alert, base: url.slice(0, url.indexOf('#')) }).toEqual({ alert: rule.alert, base });
        }
      }
    });

    it("keeps the committed rules' runbook base from package.json's repository: docs/runbook.md on main", () => {
      const repository = (JSON.parse(read('package.json')) as { repository: { url: string } }).repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
      const base = `${repository}/blob/main/docs/runbook.md`;
      const committed = [rules, parseYaml(read('deploy', 'prometheus', 'alerts.test.yaml')) as unknown, (parseYaml(read('deploy', 'k8s', 'components', 'alerts', 'prometheusrule.yaml')) as { spec: RuleFile }).spec];
      const urls = committed.flatMap((file) => [...JSON.stringify(file).matchAll(/"runbook_url":"([^"#]*)#/g)].map((match) => match[1]!));
      expect(urls.length).toBeGreaterThan(10);
      expect(new Set(urls)).toEqual(new Set([base]));
    });

    it('says, where the rules are installed, that the runbook base as shipped is a placeholder', () => {
      const repository = (JSON.parse(read('package.json')) as { repository: { url: string } }).repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
      if (new URL(repository).pathname.split('/')[1] !== 'example') return;
      const header = read('deploy', 'prometheus', 'alerts.yaml').split('\ngroups:')[0]!.replace(/\n# ?/g, ' ');
      expect(header).toContain(`${repository}, a placeholder`);
      const section = read('docs', 'operations.md').split('## Dashboards and alerts')[1]!.split('\n## ')[0]!.replace(/\s+/g, ' ');
      expect(section).toContain(`is \`${repository}\`, a placeholder`);
    });

    it('refuses a base that is not an http(s) URL', () => {
      expect(() => execFileSync(node, [path.join(repoRoot, 'scripts', 'prometheusrule.mjs'), '--out-dir', tmpdir(), '--runbook-base', 'README.md'], { stdio: 'pipe' })).toThrow(/--runbook-base must be an http\(s\) URL/);
    });
  });

  // WfsSubgraphNotReady reads wfs_ready: it must say 0 for a replica that never turned
  // ready even where nothing asks /ready (Compose, a bare process, a probe-less balancer).
  it('see a replica that never turns ready at a scrape, with no /ready probe', async () => {
    const unready = await startEmulator();
    const logs: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        logs.push(String(chunk));
        callback();
      },
    });
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', WFS_AUTH_URL: `${unready.authUrl}${TOKEN_PATH}`, WFS_TENANTS_FILE: writeTenantsFile(unready.tenants) });
    const server = await startServer(config, { logger: createLogger('info', sink) });
    try {
      await waitFor(() => logs.some((line) => line.includes('answered 404')), 'the token endpoint check to answer');
      expect(await scrapeTotal(server.url, 'wfs_ready')).toBe(0);
      expect(server.readinessProblem()).toMatch(/^the token endpoint answered 404/);
    } finally {
      await server.close();
      await unready.close();
    }
  });

  it('pass promtool check rules and every alert has a unit test in promtool test rules', () => {
    const check = execFileSync('promtool', ['check', 'rules', 'alerts.yaml'], { cwd: prometheusDir, encoding: 'utf8' });
    expect(check).toContain(`SUCCESS: ${rules.groups.flatMap((group) => group.rules).length} rules found`);
    const unit = execFileSync('promtool', ['test', 'rules', 'alerts.test.yaml'], { cwd: prometheusDir, encoding: 'utf8' });
    expect(unit).toMatch(/SUCCESS/);

    const tested = new Set([...read('deploy', 'prometheus', 'alerts.test.yaml').matchAll(/alertname: (\w+)/g)].map((match) => match[1]));
    const alerts = rules.groups.flatMap((group) => group.rules.map((rule) => rule.alert));
    expect(alerts.filter((alert) => !tested.has(alert ?? ''))).toEqual([]);
  });
});
