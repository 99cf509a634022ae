import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import { parseSamples, scrapeText } from '../helpers/metrics';
import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * The shipped dashboard and alert rules only help if they query what the subgraph
 * exposes: every metric name they use must appear at `/metrics` after a short load,
 * the PrometheusRule must hold the plain rules file's groups, and the rules must pass
 * promtool's own check and unit tests (Debian package `prometheus`; scripts/test.sh
 * installs it, so a missing promtool fails here rather than skipping).
 */

const repoRoot = path.resolve(__dirname, '../..');
const prometheusDir = path.join(repoRoot, 'deploy', 'prometheus');
const read = (...parts: string[]) => readFileSync(path.join(repoRoot, ...parts), 'utf8');

interface RuleFile {
  groups: Array<{ name: string; rules: Array<{ alert?: string; record?: string; expr: string }> }>;
}

const rules = parseYaml(read('deploy', 'prometheus', 'alerts.yaml')) as RuleFile;
const dashboard = JSON.parse(read('deploy', 'grafana', 'wfs-subgraph.json')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };

/** The metric names a PromQL expression reads (ours, and the process and Node.js defaults). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:wfs|process|nodejs)_[a-z0-9_]+)\b/g)].map((match) => match[1]!);
}

const used = new Map<string, string>();
for (const group of rules.groups) for (const rule of group.rules) for (const name of metricNames(rule.expr)) used.set(name, `alert ${rule.alert}`);
for (const panel of dashboard.panels) for (const target of panel.targets ?? []) for (const name of metricNames(target.expr)) used.set(name, `panel "${panel.title}"`);

describe('dashboard and alert rules', () => {
  let redis: RedisTestServer;
  let subgraph: TestSubgraph;
  beforeAll(async () => {
    redis = await startRedisServer();
    subgraph = await startTestSubgraph({ maxPageSize: 5 }, { WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: 'dashboards-redis-record-key-0123456789abcdef' });
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

    // A sample, not just a `# TYPE` line: a panel over a family with no series shows nothing.
    const exposed = new Set(parseSamples(await scrapeText(subgraph.server.url)).map((sample) => sample.name));
    expect(used.size).toBeGreaterThan(10);
    const missing = [...used].filter(([name]) => !exposed.has(name)).map(([name, where]) => `${name} (${where})`);
    expect(missing).toEqual([]);
  });

  it('ship the same groups as a Kubernetes PrometheusRule', () => {
    const prometheusRule = parseYaml(read('deploy', 'prometheus', 'prometheusrule.yaml')) as { apiVersion: string; kind: string; spec: RuleFile };
    expect(prometheusRule).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
    expect(prometheusRule.spec.groups).toEqual(rules.groups);
  });

  it('pass promtool check rules and every alert has a unit test in promtool test rules', () => {
    const check = execFileSync('promtool', ['check', 'rules', 'alerts.yaml'], { cwd: prometheusDir, encoding: 'utf8' });
    expect(check).toMatch(/SUCCESS: 8 rules found/);
    const unit = execFileSync('promtool', ['test', 'rules', 'alerts.test.yaml'], { cwd: prometheusDir, encoding: 'utf8' });
    expect(unit).toMatch(/SUCCESS/);

    const tested = new Set([...read('deploy', 'prometheus', 'alerts.test.yaml').matchAll(/alertname: (\w+)/g)].map((match) => match[1]));
    const alerts = rules.groups.flatMap((group) => group.rules.map((rule) => rule.alert));
    expect(alerts.filter((alert) => !tested.has(alert ?? ''))).toEqual([]);
  });
});
