import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { NUMERIC_SETTINGS, SETTINGS } from '../../src/config';
import { scrapeTotal } from '../helpers/metrics';
import { startRedisServer } from '../helpers/redisServer';
import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * The deployment examples in deploy/ are checked against what they deploy: every
 * file parses; every environment variable they give the subgraph is one the server
 * reads; probe paths and ports are the server's (asked of a running server); the
 * image and its start command are the Dockerfile's; secrets come from files the
 * operator writes (no placeholder secret is ever applied); Prometheus can find and
 * reach /metrics; the sizing follows the one measured figure; and the Kubernetes
 * objects select the Deployment's pods.
 */

const root = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

type Doc = Record<string, any>;

/**
 * Names the server reads: every setting of src/config/ (the only reader of process.env
 * but for OpenTelemetry), and the OTEL_* names src/observability/otel reads
 * (`env.NAME` / `env['NAME']` and quoted names) before handing the rest to the
 * OpenTelemetry SDK.
 */
function namesTheServerReads(): Set<string> {
  const names = new Set<string>(Object.keys(SETTINGS));
  const sources = readdirSync(path.join(root, 'src/observability/otel')).map((file) => read(`src/observability/otel/${file}`));
  for (const source of sources) {
    for (const match of source.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g)) names.add((match[1] ?? match[2])!);
    for (const match of source.matchAll(/['"]((?:WFS|OTEL)_[A-Z0-9_]+)['"]/g)) names.add(match[1]!);
  }
  return names;
}

/** Standard OpenTelemetry SDK variables the SDK itself reads (docs/operations.md, "Tracing (OpenTelemetry)": `OTEL_*`). */
const OTEL_SDK_NAMES = ['OTEL_SERVICE_NAME', 'OTEL_RESOURCE_ATTRIBUTES', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG', 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TIMEOUT'];

const known = namesTheServerReads();
const allowed = new Set([...known, ...OTEL_SDK_NAMES]);

/** The Dockerfile's runtime stage: CMD, EXPOSE, ENV and the image title label. */
function dockerfile() {
  const text = read('Dockerfile');
  const runtime = text.slice(text.lastIndexOf('\nFROM '));
  const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(runtime)![1]!) as string[];
  const expose = Number(/^EXPOSE (\d+)$/m.exec(runtime)![1]);
  const port = Number(/\bPORT=(\d+)/.exec(runtime)![1]);
  const title = /org\.opencontainers\.image\.title="([^"]+)"/.exec(runtime)![1]!;
  return { text, cmd, expose, port, title };
}

function envFile(file: string): Record<string, string> {
  return Object.fromEntries(
    read(file)
      .split('\n')
      .filter((line) => line.trim() && !line.startsWith('#'))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

function yamlDocs(file: string): Doc[] {
  return parseAllDocuments(read(file)).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
    return doc.toJS() as Doc;
  });
}
const k8sFiles = readdirSync(path.join(root, 'deploy/k8s')).filter((file) => /\.ya?ml$/.test(file));
const k8s: Doc[] = k8sFiles.flatMap((file) => yamlDocs(`deploy/k8s/${file}`));
const components = readdirSync(path.join(root, 'deploy/k8s/components'));
/** Each optional kustomize component: its Component file and the objects it adds. */
const componentDocs = Object.fromEntries(
  components.map((name) => {
    const kustomization = yamlDocs(`deploy/k8s/components/${name}/kustomization.yaml`)[0]!;
    const objects = (kustomization['resources'] as string[]).flatMap((file) => yamlDocs(`deploy/k8s/components/${name}/${file}`));
    return [name, { kustomization, objects }];
  }),
);
const ofKind = (kind: string) => k8s.filter((doc) => doc['kind'] === kind);
const deployment = ofKind('Deployment')[0]!;
const container = deployment['spec'].template.spec.containers[0];
const podLabels = deployment['spec'].template.metadata.labels as Record<string, string>;
const compose = parseYaml(read('deploy/compose.yaml')) as Doc;
const routerYaml = read('router/router.yaml');

describe('deploy/ examples', () => {
  let subgraph: TestSubgraph;
  beforeAll(async () => {
    subgraph = await startTestSubgraph();
  });
  afterAll(async () => {
    await subgraph?.close();
  });

  it('finds the names the server reads (the settings of src/config/ and the OpenTelemetry switch)', () => {
    expect([...known]).toEqual(expect.arrayContaining(['PORT', 'NODE_ENV', 'WFS_AUTH_URL', 'WFS_TENANTS_FILE', 'WFS_CURSOR_SECRET', 'WFS_ROUTER_SECRET', 'WFS_REDIS_URL', 'OTEL_EXPORTER_OTLP_ENDPOINT']));
  });

  it('parses every file: compose, Kubernetes manifests, kustomization and its components', () => {
    expect(compose['services']).toBeDefined();
    expect(k8s.map((doc) => doc['kind']).sort()).toEqual(['Deployment', 'HorizontalPodAutoscaler', 'Kustomization', 'NetworkPolicy', 'PodDisruptionBudget', 'Service']);
    const kustomization = ofKind('Kustomization')[0]!;
    expect([...kustomization['resources']].sort()).toEqual(k8sFiles.filter((file) => file !== 'kustomization.yaml').sort());
    expect(components.sort()).toEqual(['alerts', 'service-monitor']);
    for (const { kustomization: component } of Object.values(componentDocs)) {
      expect(component).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1alpha1', kind: 'Component' });
    }
    // Optional (they need the Prometheus Operator's CRDs): named in the kustomization, commented out.
    const text = read('deploy/k8s/kustomization.yaml');
    for (const name of components) expect(text).toMatch(new RegExp(`^#\\s+- components/${name}$`, 'm'));
  });

  it("starts the server, wherever a start line is written out, with the Dockerfile's CMD and its heap flags", () => {
    const cmd = dockerfile().cmd.join(' ');
    expect(cmd).toMatch(/--max-old-space-size=\d+/);
    expect(JSON.parse(read('package.json')).scripts.start).toBe(cmd);
    // Command lines in the manual's shell blocks and in the deploy files' comments.
    const manual = ['README.md', ...readdirSync(path.join(root, 'docs')).map((file) => `docs/${file}`)];
    const blocks = manual.flatMap((file) => [...read(file).matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((match) => ({ file, text: match[1]!.replace(/\\\n\s*/g, '') })));
    const comments = ['deploy/k8s/deployment.yaml', 'deploy/compose.yaml'].map((file) => ({ file, text: read(file).split('\n').filter((line) => line.trimStart().startsWith('#')).join(' ').replace(/#\s*/g, '') }));
    const lines = [...blocks, ...comments].flatMap(({ file, text }) => [...text.matchAll(/\bnode(?: --?[\w-]+(?:=\S+)?)* dist\/index\.js/g)].map((match) => ({ file, line: match[0] })));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.filter(({ line }) => line !== cmd)).toEqual([]);
  });

  it('cites only test files that exist', () => {
    const files = ['README.md', ...readdirSync(path.join(root, 'docs')).map((file) => `docs/${file}`), 'deploy/compose.yaml', ...k8sFiles.map((file) => `deploy/k8s/${file}`), 'deploy/prometheus/alerts.yaml', 'scripts/prometheusrule.mjs'];
    const cited = files.flatMap((file) => [...read(file).matchAll(/\btest\/[\w/.-]+\.test\.ts\b/g)].map((match) => ({ file, cited: match[0] })));
    expect(cited.length).toBeGreaterThan(5);
    expect(cited.filter(({ cited: test }) => !existsSync(path.join(root, test)))).toEqual([]);
  });

  describe('Kubernetes', () => {
    it('generates the Secret from git-ignored files the operator writes, so no placeholder can be applied', () => {
      const kustomization = ofKind('Kustomization')[0]!;
      // No Secret among the applied objects, in any file.
      for (const file of kustomization['resources'] as string[]) expect(yamlDocs(`deploy/k8s/${file}`).map((doc) => doc['kind'])).not.toContain('Secret');
      const [generator, ...others] = kustomization['secretGenerator'] as Array<{ name: string; files: string[]; envs: string[] }>;
      expect(others).toEqual([]);
      const sources = [...generator!.files.map((entry) => entry.split('=').pop()!), ...generator!.envs];
      expect(sources.length).toBeGreaterThan(0);
      const ignored = execFileSync('git', ['check-ignore', ...sources.map((file) => `deploy/k8s/${file}`)], { cwd: root, encoding: 'utf8' });
      expect(ignored.trim().split('\n').sort()).toEqual(sources.map((file) => `deploy/k8s/${file}`).sort());
      // The committed example shows the keys with no value at all: a copied example fails start-up.
      const example = envFile(`deploy/k8s/${generator!.envs[0]}.example`);
      expect(Object.values(example).filter((value) => value !== '')).toEqual([]);
      // Nor does any committed example under deploy/ carry a stand-in value for a secret.
      for (const file of ['deploy/secrets/router.env.example', 'deploy/secrets/cache.env.example', 'deploy/secrets/wfs.env.example']) expect({ file, values: Object.values(envFile(file)).filter((value) => value !== '') }).toEqual({ file, values: [] });
      expect(read('deploy/k8s/secrets/.gitignore')).toMatch(/^\*$/m);
    });

    it('sets only environment variables the server reads, secrets from the generated Secret', () => {
      const env = container.env as Array<{ name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }>;
      expect(env.map((entry) => entry.name).filter((name) => !allowed.has(name))).toEqual([]);
      const generator = (ofKind('Kustomization')[0]!['secretGenerator'] as Array<{ name: string; files: string[]; envs: string[] }>)[0]!;
      // The keys the generated Secret has: one per file (`key=path`), one per line of the env file.
      const secretKeys = [...generator.files.map((entry) => entry.split('=')[0]!), ...Object.keys(envFile(`deploy/k8s/${generator.envs[0]}.example`))];
      for (const entry of env.filter((item) => item.valueFrom)) {
        expect(entry.valueFrom!.secretKeyRef.name).toBe(generator.name);
        expect(secretKeys).toContain(entry.valueFrom!.secretKeyRef.key);
      }
      // Secrets never as plain values.
      for (const name of ['WFS_CURSOR_SECRET', 'WFS_ROUTER_SECRET', 'WFS_REDIS_KEY', 'WFS_REDIS_URL']) {
        expect(env.find((entry) => entry.name === name)?.valueFrom?.secretKeyRef).toBeDefined();
      }
      // Redis key with Redis; the tenants file mounted from the Secret where WFS_TENANTS_FILE points.
      const tenantsFile = env.find((entry) => entry.name === 'WFS_TENANTS_FILE')!.value!;
      const mount = container.volumeMounts.find((item: { mountPath: string }) => tenantsFile.startsWith(`${item.mountPath}/`));
      const volume = deployment['spec'].template.spec.volumes.find((item: { name: string }) => item.name === mount.name);
      expect(volume.secret.secretName).toBe(generator.name);
      expect(volume.secret.items).toContainEqual({ key: path.basename(tenantsFile), path: path.basename(tenantsFile) });
      expect(secretKeys).toContain(path.basename(tenantsFile));
    });

    it("runs the Dockerfile's image and start command on the Dockerfile's port", () => {
      const docker = dockerfile();
      expect(container.image).toMatch(new RegExp(`(^|/)${docker.title}:`));
      expect(container.command).toBeUndefined();
      expect(container.args).toBeUndefined();
      expect(docker.cmd).toEqual(['node', '--max-semi-space-size=8', '--max-old-space-size=256', 'dist/index.js']);
      expect(JSON.parse(read('package.json')).scripts.start).toBe(docker.cmd.join(' '));
      const port = container.ports.find((item: { name: string }) => item.name === 'http');
      expect(port.containerPort).toBe(docker.expose);
      expect(port.containerPort).toBe(docker.port);
      const portEnv = container.env.find((entry: { name: string }) => entry.name === 'PORT');
      expect(Number(portEnv?.value ?? docker.port)).toBe(port.containerPort);
      const service = ofKind('Service')[0]!;
      expect(service['spec'].selector).toEqual(podLabels);
      expect(service['spec'].ports[0].targetPort).toBe('http');
    });

    it("probes the server's own readiness and liveness routes, which answer 200", async () => {
      expect(container.readinessProbe.httpGet).toEqual({ path: '/ready', port: 'http' });
      expect(container.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
      const status = async (path: string) => {
        const response = await request(new URL(path, subgraph.server.url));
        await response.body.dump();
        return response.statusCode;
      };
      expect(await status(container.livenessProbe.httpGet.path)).toBe(200);
      // Readiness turns 200 once the start-up check of the token endpoint has its answer (503 "checking" until then).
      await waitFor(async () => (await status(container.readinessProbe.httpGet.path)) === 200, 'the readiness route to answer 200');
    });

    it('stays ready with Redis down, so a Redis outage never empties the Service (docs/operations.md, "Health, readiness and shutdown")', async () => {
      const redis = await startRedisServer();
      const withRedis = await startTestSubgraph({}, { WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: 'deploy-test-redis-record-key-0123456789abcdef' });
      try {
        await waitFor(async () => (await scrapeTotal(withRedis.server.url, 'wfs_shared_token_store_up')) === 1, 'Redis to answer');
        await redis.stop();
        await waitFor(async () => (await scrapeTotal(withRedis.server.url, 'wfs_shared_token_store_up', { store: 'redis' })) === 0, 'Redis to be seen down');
        const ready = await request(new URL(container.readinessProbe.httpGet.path, withRedis.server.url));
        expect(ready.statusCode).toBe(200);
        await ready.body.dump();
        // And it really serves, on a token of its own.
        const tenant = { 'x-tenant-id': withRedis.emulator.tenants[0]!.tenantId };
        expect(errorCodes(await withRedis.query('{ locations(first: 1) { nodes { id } } }', {}, tenant))).toEqual([]);
      } finally {
        await withRedis.close();
        await redis.stop();
      }
    });

    it("ends within the grace period: the drain (WFS_DRAIN_SECONDS) plus the router's subgraph timeout, with no preStop pause before it", () => {
      const routerTimeout = Number(/subgraphs:\s*\n\s*wfs:\s*\n(?:\s*#.*\n)*\s*timeout:\s*(\d+)s/.exec(routerYaml)![1]);
      const drain = Number(container.env.find((entry: { name: string }) => entry.name === 'WFS_DRAIN_SECONDS')?.value ?? NUMERIC_SETTINGS.WFS_DRAIN_SECONDS.default);
      expect(container.lifecycle?.preStop).toBeUndefined();
      expect(deployment['spec'].template.spec.terminationGracePeriodSeconds).toBeGreaterThan(drain + routerTimeout);
      const wfs = compose['services'].wfs as { stop_grace_period: string; environment: Record<string, string> };
      expect(Number(/^(\d+)s$/.exec(wfs.stop_grace_period)?.[1])).toBeGreaterThan(Number(wfs.environment['WFS_DRAIN_SECONDS'] ?? NUMERIC_SETTINGS.WFS_DRAIN_SECONDS.default) + routerTimeout);
    });

    it('keeps a replica through disruptions, scales the Deployment, and lets only the router and Prometheus in', () => {
      const pdb = ofKind('PodDisruptionBudget')[0]!;
      expect(pdb['spec'].selector.matchLabels).toEqual(podLabels);
      expect(pdb['spec'].minAvailable).toBeLessThan(deployment['spec'].replicas);
      const hpa = ofKind('HorizontalPodAutoscaler')[0]!;
      expect(hpa['spec'].scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment['metadata'].name });
      expect(hpa['spec'].minReplicas).toBeGreaterThanOrEqual(2);
      const policy = ofKind('NetworkPolicy')[0]!;
      expect(policy['spec'].podSelector.matchLabels).toEqual(podLabels);
      expect(policy['spec'].policyTypes).toEqual(['Ingress']);
      expect(policy['spec'].ingress).toEqual([
        { from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'router' } } }], ports: [{ protocol: 'TCP', port: dockerfile().expose }] },
        // Prometheus in the usual monitoring namespace, with no edit (the namespace label is set by Kubernetes itself).
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }],
          ports: [{ protocol: 'TCP', port: dockerfile().expose }],
        },
      ]);
    });

    it('lets Prometheus find /metrics: scrape annotations, a ServiceMonitor on the Service, the port the policy opens', async () => {
      const annotations = deployment['spec'].template.metadata.annotations as Record<string, string>;
      const httpPort = container.ports.find((item: { name: string }) => item.name === 'http').containerPort as number;
      expect(annotations).toEqual({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(httpPort), 'prometheus.io/path': '/metrics' });
      const [monitor, ...more] = componentDocs['service-monitor']!.objects;
      expect(more).toEqual([]);
      expect(monitor).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor' });
      const service = ofKind('Service')[0]!;
      // The job label a ServiceMonitor gives is the Service's name: what the alert rules select.
      expect(service['metadata'].name).toBe('wfs-subgraph');
      expect(read('deploy/prometheus/alerts.yaml')).toContain(`job="${service['metadata'].name}"`);
      expect(monitor!['spec'].selector.matchLabels).toEqual(service['metadata'].labels);
      expect(monitor!['spec'].endpoints.map((endpoint: { port: string }) => endpoint.port)).toEqual([service['spec'].ports[0].name]);
      expect(service['spec'].ports[0].targetPort).toBe('http');
      const policyPorts = ofKind('NetworkPolicy')[0]!['spec'].ingress.flatMap((rule: { ports: Array<{ port: number }> }) => rule.ports.map((item) => item.port));
      expect(policyPorts).toContain(httpPort);
      // The path both name answers with Prometheus text on the server.
      for (const metricsPath of new Set([annotations['prometheus.io/path']!, ...monitor!['spec'].endpoints.map((endpoint: { path: string }) => endpoint.path)])) {
        const response = await request(new URL(metricsPath, subgraph.server.url));
        expect({ metricsPath, status: response.statusCode }).toEqual({ metricsPath, status: 200 });
        expect(await response.body.text()).toMatch(/^# HELP wfs_ready /m);
      }
    });

    it('sizes memory and the autoscaler from the one measured figure in docs/operations.md, "Sizing"', () => {
      const page = read('docs/operations.md');
      const start = page.indexOf('\n## Sizing');
      const sizing = page.slice(start, page.indexOf('\n## ', start + 1));
      const peakRss = Number(/peak RSS \*\*(\d+) MiB\*\*/.exec(sizing)![1]);
      // Quoted from a measured run in bench/README.md, not made up here.
      expect(read('bench/README.md')).toContain(`Peak RSS in that run ${peakRss} MiB`);
      // Every peak-RSS figure the manual and deploy/ state is that one.
      const stated = ['README.md', ...readdirSync(path.join(root, 'docs')).map((file) => `docs/${file}`), 'deploy/k8s/deployment.yaml', 'deploy/compose.yaml'].flatMap((file) =>
        [...read(file).matchAll(/(\d+) MiB peak RSS|peak RSS[^\d\n]{0,12}(\d+) MiB/g)].map((match) => ({ file, mib: Number(match[1] ?? match[2]) })),
      );
      expect(stated.filter(({ mib }) => mib !== peakRss)).toEqual([]);
      // The request covers the peak with a quarter to spare; the limit leaves room for bursts.
      const mebibytes = (quantity: string) => Number(/^(\d+)Mi$/.exec(quantity)![1]);
      expect(mebibytes(container.resources.requests.memory)).toBeGreaterThanOrEqual(peakRss * 1.25);
      expect(mebibytes(container.resources.limits.memory)).toBeGreaterThanOrEqual(mebibytes(container.resources.requests.memory) * 1.5);
      // Requests per second per replica at the autoscaler's target: CPU target / CPU per request.
      const cpuMsPerRequest = Number(/\*\*([\d.]+) cpu ms per request\*\*/.exec(sizing)![1]);
      expect(read('bench/README.md')).toContain(`${cpuMsPerRequest} cpu ms/req`);
      const cpuRequestMillicores = Number(/^(\d+)m$/.exec(container.resources.requests.cpu)![1]);
      const target = ofKind('HorizontalPodAutoscaler')[0]!['spec'].metrics[0].resource.target.averageUtilization as number;
      const perReplica = Math.floor((cpuRequestMillicores * target) / 100 / cpuMsPerRequest);
      expect(sizing).toContain(`**${perReplica} requests per second per replica**`);
    });
  });

  describe('Compose', () => {
    const services = compose['services'] as Record<string, Doc>;
    const wfs = services['wfs']!;

    it('runs Apollo Router from the official image on router/ and the committed supergraph', () => {
      const router = services['router']!;
      expect(router['image']).toMatch(/^ghcr\.io\/apollographql\/router:v2\.\d+\.\d+$/);
      expect(router['volumes']).toEqual(expect.arrayContaining(['../router:/dist/config:ro', '../supergraph.graphql:/dist/schema/supergraph.graphql:ro']));
      expect(router['command']).toEqual(['--config', '/dist/config/router.yaml', '--supergraph', '/dist/schema/supergraph.graphql']);
      for (const volume of router['volumes'] as string[]) expect(existsSync(path.resolve(root, 'deploy', volume.split(':')[0]!))).toBe(true);
      // Every variable the router is given is one router.yaml reads.
      const routerReads = new Set([...routerYaml.matchAll(/\$\{env\.([A-Z0-9_]+)/g)].map((match) => match[1]!));
      const routerEnv = [...Object.keys(router['environment']), ...(router['env_file'] as string[]).flatMap((file) => Object.keys(envFile(`deploy/${file}.example`)))];
      expect(routerEnv.filter((name) => !routerReads.has(name))).toEqual([]);
      // It routes `wfs` to the service on the server's port.
      expect(router['environment'].SUBGRAPH_WFS_URL).toBe(`http://wfs:${wfs['environment'].PORT}/graphql`);
      expect(routerEnv).toContain('WFS_ROUTER_SECRET');
    });

    it('runs two replicas of the Dockerfile image with variables the server reads, secrets from files', () => {
      const docker = dockerfile();
      expect(wfs['build']).toEqual({ context: '..', dockerfile: 'Dockerfile' });
      expect(wfs['image']).toMatch(new RegExp(`^${docker.title}:`));
      expect(wfs['command']).toBeUndefined();
      expect(wfs['deploy'].replicas).toBe(2);
      expect(Number(wfs['environment'].PORT)).toBe(docker.port);
      const envFiles = wfs['env_file'] as string[];
      const names = [...Object.keys(wfs['environment']), ...envFiles.flatMap((file) => Object.keys(envFile(`deploy/${file}.example`)))];
      expect(names.filter((name) => !allowed.has(name))).toEqual([]);
      // No secret inline: they come from the env files and the tenants secret.
      for (const name of ['WFS_CURSOR_SECRET', 'WFS_ROUTER_SECRET', 'WFS_REDIS_KEY']) {
        expect(wfs['environment'][name]).toBeUndefined();
        expect(names).toContain(name);
      }
      expect(wfs['environment'].WFS_REDIS_URL).toMatch(/^redis:\/\/redis:/);
      expect(services['redis']).toBeDefined();
      expect(wfs['environment'].WFS_TENANTS_FILE).toBe(`/run/secrets/${wfs['secrets'][0].target}`);
      expect(compose['secrets'][wfs['secrets'][0].source].file).toBe('secrets/tenants.json');
      expect(existsSync(path.join(root, 'deploy/secrets/tenants.example.json'))).toBe(true);
      // The Dockerfile's HEALTHCHECK (GET /health) is what `service_healthy` waits on.
      expect(docker.text).toMatch(/HEALTHCHECK[\s\S]*\/health/);
      expect(services['router']!['depends_on'].wfs).toEqual({ condition: 'service_healthy' });
      // Not reachable from outside: no published port, and the people subgraph as well.
      expect(wfs['ports']).toBeUndefined();
      expect(services['people']!['ports']).toBeUndefined();
    });
  });
});
