import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * The deployment examples in deploy/ are checked against what they deploy: every
 * file parses; every environment variable they give the subgraph is one the server
 * reads; probe paths and ports are the server's (asked of a running server); the
 * image and its start command are the Dockerfile's; secrets referenced exist; and
 * the Kubernetes objects select the Deployment's pods.
 */

const root = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

type Doc = Record<string, any>;

/**
 * Names the server reads: `env.NAME` / `env['NAME']` and quoted `WFS_*` names in
 * src/config.ts (the only reader of process.env) and the OTEL_* names src/telemetry
 * reads before handing the rest to the OpenTelemetry SDK.
 */
function namesTheServerReads(): Set<string> {
  const names = new Set<string>();
  const sources = [read('src/config.ts'), ...readdirSync(path.join(root, 'src/telemetry')).map((file) => read(`src/telemetry/${file}`))];
  for (const source of sources) {
    for (const match of source.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g)) names.add((match[1] ?? match[2])!);
    for (const match of source.matchAll(/['"]((?:WFS|OTEL)_[A-Z0-9_]+)['"]/g)) names.add(match[1]!);
  }
  return names;
}

/** Standard OpenTelemetry SDK variables the SDK itself reads (CONTRACT.md section 2: `OTEL_*`). */
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

const k8sFiles = readdirSync(path.join(root, 'deploy/k8s')).filter((file) => /\.ya?ml$/.test(file));
const k8s: Doc[] = k8sFiles.flatMap((file) =>
  parseAllDocuments(read(`deploy/k8s/${file}`)).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`deploy/k8s/${file}: ${doc.errors[0]!.message}`);
    return doc.toJS() as Doc;
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

  it('finds the names the server reads (the parser of config.ts works)', () => {
    expect([...known]).toEqual(expect.arrayContaining(['PORT', 'NODE_ENV', 'WFS_AUTH_URL', 'WFS_TENANTS_FILE', 'WFS_CURSOR_SECRET', 'WFS_ROUTER_SECRET', 'WFS_REDIS_URL', 'OTEL_EXPORTER_OTLP_ENDPOINT']));
  });

  it('parses every file: compose, Kubernetes manifests, kustomization', () => {
    expect(compose['services']).toBeDefined();
    expect(k8s.map((doc) => doc['kind']).sort()).toEqual(['Deployment', 'HorizontalPodAutoscaler', 'Kustomization', 'NetworkPolicy', 'PodDisruptionBudget', 'Secret', 'Service']);
    const kustomization = ofKind('Kustomization')[0]!;
    expect([...kustomization['resources']].sort()).toEqual(k8sFiles.filter((file) => file !== 'kustomization.yaml').sort());
  });

  describe('Kubernetes', () => {
    it('sets only environment variables the server reads, secrets from the Secret', () => {
      const env = container.env as Array<{ name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }>;
      expect(env.map((entry) => entry.name).filter((name) => !allowed.has(name))).toEqual([]);
      const secret = ofKind('Secret')[0]!;
      for (const entry of env.filter((item) => item.valueFrom)) {
        expect(entry.valueFrom!.secretKeyRef.name).toBe(secret['metadata'].name);
        expect(Object.keys(secret['stringData'])).toContain(entry.valueFrom!.secretKeyRef.key);
      }
      // Secrets never as plain values.
      for (const name of ['WFS_CURSOR_SECRET', 'WFS_ROUTER_SECRET', 'WFS_REDIS_KEY', 'WFS_REDIS_URL']) {
        expect(env.find((entry) => entry.name === name)?.valueFrom?.secretKeyRef).toBeDefined();
      }
      // Redis key with Redis; the tenants file mounted from the Secret where WFS_TENANTS_FILE points.
      const tenantsFile = env.find((entry) => entry.name === 'WFS_TENANTS_FILE')!.value!;
      const mount = container.volumeMounts.find((item: { mountPath: string }) => tenantsFile.startsWith(`${item.mountPath}/`));
      const volume = deployment['spec'].template.spec.volumes.find((item: { name: string }) => item.name === mount.name);
      expect(volume.secret.secretName).toBe(secret['metadata'].name);
      expect(volume.secret.items).toContainEqual({ key: path.basename(tenantsFile), path: path.basename(tenantsFile) });
      expect(Object.keys(secret['stringData'])).toContain(path.basename(tenantsFile));
      expect(JSON.parse(secret['stringData'][path.basename(tenantsFile)])).toEqual([expect.objectContaining({ tenantId: expect.any(String), clientId: expect.any(String), clientSecret: expect.any(String) })]);
    });

    it("runs the Dockerfile's image and start command on the Dockerfile's port", () => {
      const docker = dockerfile();
      expect(container.image).toMatch(new RegExp(`(^|/)${docker.title}:`));
      expect(container.command).toBeUndefined();
      expect(container.args).toBeUndefined();
      expect(docker.cmd).toEqual(['node', '--max-semi-space-size=8', 'dist/index.js']);
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
      for (const probe of [container.readinessProbe, container.livenessProbe]) {
        const response = await request(new URL(probe.httpGet.path, subgraph.server.url));
        expect({ path: probe.httpGet.path, status: response.statusCode }).toEqual({ path: probe.httpGet.path, status: 200 });
        await response.body.dump();
      }
    });

    it("ends within the grace period: preStop plus the router's subgraph timeout", () => {
      const routerTimeout = Number(/subgraphs:\s*\n\s*wfs:\s*\n(?:\s*#.*\n)*\s*timeout:\s*(\d+)s/.exec(routerYaml)![1]);
      const preStop = container.lifecycle.preStop.sleep.seconds as number;
      expect(deployment['spec'].template.spec.terminationGracePeriodSeconds).toBeGreaterThan(preStop + routerTimeout);
      expect(container.resources).toEqual({ requests: { cpu: expect.any(String), memory: '256Mi' }, limits: { memory: '512Mi' } });
    });

    it('keeps a replica through disruptions, scales the Deployment, and lets only the router in', () => {
      const pdb = ofKind('PodDisruptionBudget')[0]!;
      expect(pdb['spec'].selector.matchLabels).toEqual(podLabels);
      expect(pdb['spec'].minAvailable).toBeLessThan(deployment['spec'].replicas);
      const hpa = ofKind('HorizontalPodAutoscaler')[0]!;
      expect(hpa['spec'].scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment['metadata'].name });
      expect(hpa['spec'].minReplicas).toBeGreaterThanOrEqual(2);
      const policy = ofKind('NetworkPolicy')[0]!;
      expect(policy['spec'].podSelector.matchLabels).toEqual(podLabels);
      expect(policy['spec'].policyTypes).toEqual(['Ingress']);
      expect(policy['spec'].ingress).toEqual([{ from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'router' } } }], ports: [{ protocol: 'TCP', port: dockerfile().expose }] }]);
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
