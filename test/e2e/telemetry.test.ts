import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, type Emulator, type EmulatorTenant } from '../../tools/emulator';
import { spanAttributes as attributes, startOtlpReceiver, type OtlpReceiver, type OtlpSpan } from '../helpers/otlpReceiver';
import { emulatorEnv, postGraphQL } from '../helpers/postGraphQL';

/**
 * OpenTelemetry end to end, on the built server as a deployment runs it
 * (`node dist/index.js`, configured by the standard OTEL_* variables): a real
 * OTLP/HTTP receiver on loopback, a query carrying the router's `traceparent`, and
 * the trace that must arrive. And, with tracing off, proof that no OpenTelemetry
 * module was loaded at all.
 */

const root = join(__dirname, '..', '..');
const ROUTER_SECRET = 'router-secret-for-the-telemetry-test-0123456789';
const CURSOR_SECRET = 'telemetry-cursor-secret-0123456789abcdef';

interface Child {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  /** Resolves with the first match of `pattern` in stdout, as soon as it is printed. */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>;
  exit: Promise<number | null>;
}

function spawnNode(args: string[], env: Record<string, string>): Child {
  if (!existsSync(join(root, 'dist', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` first (scripts/test.sh does)');
  const child = spawn(process.execPath, args, { cwd: root, env: { PATH: process.env.PATH ?? '', ...env } });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += String(chunk)));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.stdout.on('data', (chunk) => (stdout += String(chunk)));
  return {
    child,
    output: () => stdout + stderr,
    exit,
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(stdout);
          if (!match) return;
          child.stdout.off('data', check);
          resolve(match);
        };
        child.stdout.on('data', check);
        void exit.then(() => reject(new Error(`exited before printing ${pattern}: ${stdout}${stderr}`)));
        check();
      }),
  };
}

const post = (url: string, query: string, headers: Record<string, string>) => postGraphQL(url, { query }, headers);

const children: Child[] = [];
afterEach(async () => {
  for (const running of children.splice(0)) {
    if (running.child.exitCode === null) {
      running.child.kill('SIGKILL');
      await running.exit;
    }
  }
});

let emulator: Emulator;
let receiver: OtlpReceiver;
let tenant: EmulatorTenant;

beforeAll(async () => {
  emulator = await startEmulator();
  receiver = await startOtlpReceiver();
  tenant = emulator.tenants.find((candidate) => candidate.grantedScopes.includes('shifts.read'))!;
});

afterAll(async () => {
  await receiver?.close();
  await emulator?.close();
});

const serverEnv = (): Record<string, string> => ({
  PORT: '0',
  ...emulatorEnv(emulator, CURSOR_SECRET),
  WFS_ROUTER_SECRET: ROUTER_SECRET,
  LOG_LEVEL: 'debug',
});

describe('OpenTelemetry tracing in node dist/index.js', () => {
  it("continues the router's traceparent: one trace with the operation, upstream list, token and entity-index spans, and no secret", async () => {
    const server = spawnNode([join('dist', 'index.js')], {
      ...serverEnv(),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'wfs-subgraph-under-test',
      // Export each batch soon after its spans end (the SDK's own variable).
      OTEL_BSP_SCHEDULE_DELAY: '50',
      // The shortest drain after SIGTERM: the flush on shutdown is the subject here, not the drain.
      WFS_DRAIN_SECONDS: '1',
      // Pages and answers kept for 30 s: a query asked a third time is answered whole, and its span still named.
      WFS_FRESHNESS_SECONDS: '30',
    });
    children.push(server);
    const url = (await server.waitFor(/"url":"(http:[^"]+)"/))[1]!;

    const traceId = randomBytes(16).toString('hex');
    const routerSpanId = randomBytes(8).toString('hex');
    const headers = { 'x-tenant-id': tenant.tenantId, 'router-authorization': ROUTER_SECRET, traceparent: `00-${traceId}-${routerSpanId}-01` };
    const response = await post(url, 'query Rota { locations(first: 2) { edges { cursor node { id name } } } shifts(first: 3) { edges { cursor node { id location { name } } } } }', headers);
    expect(response.errors).toBeUndefined();

    const inTrace = (spans: OtlpSpan[]) => spans.filter((span) => span.traceId === traceId);
    // Spans end in order (children first), so the operation span arriving means its children were sent too.
    await receiver.until((spans) => inTrace(spans).some((span) => span.name === 'query Rota'));
    expect(receiver.services).toContain('wfs-subgraph-under-test');
    const trace = inTrace(receiver.spans);
    const operation = trace.find((span) => span.name === 'query Rota')!;
    // The operation span hangs under the router's span: one trace from router to upstream.
    expect(operation.parentSpanId).toBe(routerSpanId);
    expect(attributes(operation)).toMatchObject({ 'graphql.operation.type': 'query', 'graphql.operation.name': 'Rota' });

    const byId = new Map(trace.map((span) => [span.spanId, span]));
    const underOperation = (span: OtlpSpan): boolean => {
      for (let parent = span.parentSpanId; parent; parent = byId.get(parent)?.parentSpanId) if (parent === operation.spanId) return true;
      return false;
    };
    const lists = trace.filter((span) => span.name.startsWith('upstream.list '));
    expect(lists.map((span) => span.name)).toEqual(expect.arrayContaining(['upstream.list locations', 'upstream.list shifts']));
    for (const span of lists) {
      expect(underOperation(span)).toBe(true);
      expect(attributes(span)).toMatchObject({
        'wfs.list': span.name.slice('upstream.list '.length),
        'wfs.page_size': expect.anything(),
        'http.response.status_code': expect.anything(),
        'wfs.retries': expect.anything(),
        'wfs.coalesced': false,
        'wfs.shard.origin': expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      });
      expect(Number(attributes(span)['http.response.status_code'])).toBe(200);
      expect(Number(attributes(span)['wfs.retries'])).toBe(0);
    }
    const tokens = trace.filter((span) => span.name === 'upstream.token');
    expect(tokens).toHaveLength(1);
    expect(underOperation(tokens[0]!)).toBe(true);
    expect(attributes(tokens[0]!)).toEqual({ 'wfs.tenant': tenant.tenantId, 'wfs.outcome': 'ok' });
    const lookups = trace.filter((span) => span.name === 'entity_index.lookup');
    expect(lookups.length).toBeGreaterThanOrEqual(1);
    for (const span of lookups) {
      expect(underOperation(span)).toBe(true);
      expect(attributes(span)['wfs.entity_index.result']).toMatch(/^(hit|scan)$/);
    }

    // Log lines written while the operation was served carry its trace id (and its request id).
    const requestLines = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { event?: string; traceId?: string; requestId?: string })
      .filter((line) => line.event === 'graphql_request');
    expect(requestLines.find((line) => line.traceId === traceId)).toMatchObject({ requestId: expect.any(String) });

    // A second operation whose locations the first one put in the index: a hit, and no token request.
    const again = randomBytes(16).toString('hex');
    const second = await post(url, 'query Again { shifts(first: 3) { nodes { id location { name } } } }', { ...headers, traceparent: `00-${again}-${randomBytes(8).toString('hex')}-01` });
    expect(second.errors).toBeUndefined();
    await receiver.until((spans) => spans.some((span) => span.traceId === again && span.name === 'query Again'));
    const secondTrace = receiver.spans.filter((span) => span.traceId === again);
    // The index answers the resolvers straight (the same path as with tracing off): no loader batch, so no lookup span, and no locations call;
    // the shifts page is the one the first operation read, kept within the window.
    expect(secondTrace.filter((span) => span.name === 'entity_index.lookup')).toHaveLength(0);
    expect(secondTrace.filter((span) => span.name === 'upstream.list locations')).toHaveLength(0);
    expect(secondTrace.filter((span) => span.name === 'upstream.list shifts')).toHaveLength(0);
    expect(secondTrace.filter((span) => span.name === 'upstream.token')).toHaveLength(0);

    // The first operation asked twice more: kept whole the second time, answered whole the
    // third, before Apollo Server runs. Its span is still named after the operation, under
    // the router's, marked as answered whole, with nothing under it.
    const rota = 'query Rota { locations(first: 2) { edges { cursor node { id name } } } shifts(first: 3) { edges { cursor node { id location { name } } } } }';
    const kept = await post(url, rota, headers);
    expect(kept.errors).toBeUndefined();
    const wholeTrace = randomBytes(16).toString('hex');
    const wholeParent = randomBytes(8).toString('hex');
    const whole = await post(url, rota, { ...headers, traceparent: `00-${wholeTrace}-${wholeParent}-01` });
    // The answer kept the second time, cursors and all (each answer seals its own).
    expect(whole.data).toEqual(kept.data);
    await receiver.until((spans) => spans.some((span) => span.traceId === wholeTrace && span.name === 'query Rota'));
    const answeredWhole = receiver.spans.filter((span) => span.traceId === wholeTrace);
    expect(answeredWhole.map((span) => span.name)).toEqual(['query Rota']);
    expect(answeredWhole[0]!.parentSpanId).toBe(wholeParent);
    expect(attributes(answeredWhole[0]!)).toMatchObject({ 'graphql.operation.type': 'query', 'graphql.operation.name': 'Rota', 'wfs.whole_answer': true });

    // Nothing secret in any attribute of any span: no client secret, router or cursor
    // secret, bearer token (the emulator issues JWTs) or cursor.
    const cursors = [...response.data.locations.edges, ...response.data.shifts.edges].map((edge: { cursor: string }) => edge.cursor);
    const values = JSON.stringify(receiver.spans.map((span) => [span.name, span.attributes ?? []]));
    for (const secret of [...emulator.tenants.map((t) => t.clientSecret), ROUTER_SECRET, CURSOR_SECRET, ...cursors]) expect(values).not.toContain(secret);
    expect(values).not.toMatch(/eyJ[\w-]+\.[\w-]+|bearer/i);

    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
  });

  /**
   * A child process that loads the server the way index.ts does, serves one query,
   * and prints which modules it loaded: with tracing off, none of @opentelemetry.
   * The same script with OTEL_EXPORTER_OTLP_ENDPOINT set is the control that shows
   * the check can see them.
   */
  const LIST_MODULES = `
    require('./dist/compileCache.js');
    const { loadConfig } = require('./dist/config');
    const { startServer } = require('./dist/server.js');
    const { createLogger } = require('./dist/observability/logger.js');
    (async () => {
      const config = loadConfig();
      const server = await startServer(config, { logger: createLogger('silent') });
      const response = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-tenant-id': process.env.TENANT, 'router-authorization': process.env.WFS_ROUTER_SECRET },
        body: JSON.stringify({ query: '{ locations(first: 1) { nodes { id } } }' }),
      });
      const body = await response.json();
      // What a log mixin sees: the trace id inside a traced request, nothing outside.
      const { requestLogFields } = require('./dist/observability/requestScope.js');
      const tracing = await require('./dist/observability/otel/index.js').startTracing(process.env);
      const { traceRequest } = require('./dist/observability/otel/observer.js');
      const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const inside = async () => requestLogFields().traceId;
      const traceIdInside = tracing ? await traceRequest(tracing, { traceparent }, inside) : await inside();
      const traceIdOutside = requestLogFields().traceId;
      await server.close();
      const loaded = Object.keys(require.cache).filter((file) => file.includes('@opentelemetry') || file.endsWith('observability/otel/sdk.js'));
      // Who first required the API package (prom-client does, for its exemplars).
      const apiLoadedBy = loaded
        .filter((file) => /@opentelemetry[\\/]api[\\/]build[\\/]src[\\/]index\\.js$/.test(file))
        .map((file) => require.cache[file].parent && require.cache[file].parent.filename);
      process.stdout.write(JSON.stringify({ served: Boolean(body.data && body.data.locations), loaded, apiLoadedBy, traceIdInside, traceIdOutside }) + '\\n');
      process.exit(0);
    })();
  `;

  it('loads no @opentelemetry module when tracing is off, and does when OTEL_EXPORTER_OTLP_ENDPOINT is set', async () => {
    const run = async (extra: Record<string, string>) => {
      const script = spawnNode(['-e', LIST_MODULES], { ...serverEnv(), TENANT: tenant.tenantId, ...extra });
      children.push(script);
      const line = (await script.waitFor(/^\{"served".*$/m))[0];
      return JSON.parse(line) as { served: boolean; loaded: string[]; apiLoadedBy: string[]; traceIdInside?: string; traceIdOutside?: string };
    };
    const off = await run({});
    expect(off.served).toBe(true);
    // prom-client (metrics) requires the API package, a set of no-op stubs, for its
    // exemplars; no SDK, exporter, propagator or resource module is loaded, nor our own observability/otel/sdk.ts.
    expect(off.loaded.filter((file) => !/@opentelemetry[\\/]api[\\/]/.test(file))).toEqual([]);
    expect(off.apiLoadedBy.every((parent) => /node_modules[\\/]prom-client[\\/]/.test(parent))).toBe(true);
    // currentTraceId() (for the logger's mixin) costs nothing and says nothing when off.
    expect(off.traceIdInside).toBeUndefined();
    expect(off.traceIdOutside).toBeUndefined();
    const on = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    expect(on.served).toBe(true);
    expect(on.loaded.some((file) => file.includes('@opentelemetry/sdk-trace-node'))).toBe(true);
    expect(on.loaded.some((file) => file.includes('@opentelemetry/exporter-trace-otlp-http'))).toBe(true);
    expect(on.traceIdInside).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(on.traceIdOutside).toBeUndefined();
  });
});
