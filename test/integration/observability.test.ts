import { once } from 'node:events';
import { connect } from 'node:net';
import { request } from 'undici';
import { makeTenant, type EmulatorTenant } from '../../tools/emulator';
import { as } from '../helpers/fixtures';
import { errorCodes, postGraphQL, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { parseSamples, scrapeText, total } from '../helpers/metrics';
import { allocate, collectSeen, exposedGc, gcCounted } from '../helpers/gcMetrics';
import { waitFor } from '../helpers/waitFor';

/**
 * What on-call finds in the logs and /metrics when the upstream fails: one
 * structured line per failed call with its cause, the request id on every line of a
 * request, one debug line per GraphQL request, and clients that go away counted as
 * aborted, not as failures.
 */

const FAILING = makeTenant({ tenantId: 'a1a1a1a1-0000-4000-8000-000000000001', clientId: 'client-o1', clientSecret: 'secret-o1-7f3a9c2e', grantedScopes: ['shifts.read'], shard: 1, locationCount: 6, shiftCount: 8 });
const LOOPING = makeTenant({ tenantId: 'b2b2b2b2-0000-4000-8000-000000000002', clientId: 'client-o2', clientSecret: 'secret-o2-1e8d4b6a', grantedScopes: ['shifts.read'], shard: 0, locationCount: 6, shiftCount: 8 });
const PATIENT = makeTenant({ tenantId: 'c3c3c3c3-0000-4000-8000-000000000003', clientId: 'client-o3', clientSecret: 'secret-o3-9b2c7d1f', grantedScopes: ['shifts.read'], shard: 0, locationCount: 4, shiftCount: 4 });
const tenants: EmulatorTenant[] = [FAILING, LOOPING, PATIENT];

interface LogLine {
  level: number;
  msg: string;
  event?: string;
  requestId?: string;
  [field: string]: unknown;
}

const WARN = 40;
const DEBUG = 20;

function lines(subgraph: TestSubgraph): LogLine[] {
  return subgraph.logs.flatMap((chunk) => chunk.split('\n').filter(Boolean)).map((text) => JSON.parse(text) as LogLine);
}

/** POSTs a query as `tenant`; the body and the request id the server answered with. */
async function post(subgraph: TestSubgraph, query: string, tenant: EmulatorTenant, requestId?: string) {
  const body = await postGraphQL(subgraph.server.url, { query }, { ...as(tenant), ...(requestId && { 'x-request-id': requestId }) });
  return { body, requestId: body.headers?.['x-request-id'] as string };
}

const LOCATIONS = '{ locations(first: 5) { nodes { id name } } }';

let subgraph: TestSubgraph;
beforeAll(async () => {
  subgraph = await startTestSubgraph({ tenants, maxPageSize: 2 });
});
afterAll(() => subgraph.close());
afterEach(() => {
  subgraph.emulator.clearFaults();
  subgraph.emulator.setEnvelopeRewriter(undefined);
});

describe('upstream failure logs', () => {
  it('writes one warn line per failed call: tenant, list, shard origin, cause, status, attempts, duration, request id', async () => {
    subgraph.emulator.injectFault({ endpoint: 'locations', status: 503, times: 2, tenantId: FAILING.tenantId });
    const before = subgraph.logs.length;
    const { body, requestId } = await post(subgraph, 'query Failing ' + LOCATIONS, FAILING);
    expect(errorCodes(body)).toEqual(['UPSTREAM_UNAVAILABLE']);

    const logged = lines({ ...subgraph, logs: subgraph.logs.slice(before) });
    const failures = logged.filter((line) => line.event === 'upstream_call_failed');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({
      level: WARN,
      requestId,
      tenantId: FAILING.tenantId,
      list: 'locations',
      origin: subgraph.emulator.shardUrls[1],
      cause: 'http_status',
      status: 503,
      code: 'UPSTREAM_UNAVAILABLE',
      attempts: 2,
    });
    expect(typeof failures[0]!.durationMs).toBe('number');
    // The origin only: no path, query, cursor or token anywhere in the line.
    expect(JSON.stringify(failures[0])).not.toMatch(/\/api\/|page_size|cursor|Bearer|eyJ/);

    // Every line written while serving it carries its id: the token obtained on the way too.
    expect(logged.find((line) => line.msg === 'token obtained')).toMatchObject({ requestId });
    expect(logged.every((line) => line.requestId === requestId)).toBe(true);

    expect(logged.find((line) => line.event === 'graphql_request')).toMatchObject({
      level: DEBUG,
      requestId,
      operationName: 'Failing',
      operationType: 'query',
      tenantId: FAILING.tenantId,
      upstreamCalls: 1,
      errorCodes: ['UPSTREAM_UNAVAILABLE'],
      aborted: false,
    });
  });

  it('counts cache hits and upstream calls in the debug line of each request', async () => {
    const query = '{ shifts(first: 4) { nodes { id location { name } } } }';
    const before = subgraph.logs.length;
    const first = await post(subgraph, query, PATIENT);
    const second = await post(subgraph, query, PATIENT);
    expect(errorCodes(first.body)).toEqual([]);
    expect(errorCodes(second.body)).toEqual([]);
    const debugLine = (requestId: string) => lines({ ...subgraph, logs: subgraph.logs.slice(before) }).find((line) => line.event === 'graphql_request' && line.requestId === requestId);
    expect(debugLine(first.requestId)).toMatchObject({ tenantId: PATIENT.tenantId, upstreamCalls: expect.any(Number), errorCodes: [] });
    // The second request finds the locations in the entity index the first one filled.
    expect(debugLine(second.requestId)).toMatchObject({ tenantId: PATIENT.tenantId, cacheHits: expect.any(Number) });
    expect(debugLine(second.requestId)!.cacheHits).toBeGreaterThan(0);
    expect(debugLine(second.requestId)!.upstreamCalls).toBeLessThan(debugLine(first.requestId)!.upstreamCalls as number);
    expect(await scrapeTotalOf('wfs_cache_requests_total', { cache: 'entity_index', result: 'hit' })).toBeGreaterThan(0);
  });

  it("adds each request's cache hits to wfs_cache_requests_total, once it has ended: the same number its debug line gives", async () => {
    const query = '{ shifts(first: 6) { nodes { id location { name } } } }';
    await post(subgraph, query, PATIENT); // fills the entity index
    const hitsBefore = await scrapeTotalOf('wfs_cache_requests_total', { result: 'hit' });
    const before = subgraph.logs.length;
    const { body, requestId } = await post(subgraph, query, PATIENT);
    expect(errorCodes(body)).toEqual([]);
    const line = lines({ ...subgraph, logs: subgraph.logs.slice(before) }).find((entry) => entry.event === 'graphql_request' && entry.requestId === requestId)!;
    // The shifts' locations, answered by the index the first request filled.
    expect(line.cacheHits).toBeGreaterThan(0);
    await waitFor(async () => (await scrapeTotalOf('wfs_cache_requests_total', { result: 'hit' })) - hitsBefore >= (line.cacheHits as number), 'the cache hits to be counted');
    expect((await scrapeTotalOf('wfs_cache_requests_total', { result: 'hit' })) - hitsBefore).toBe(line.cacheHits);
  });

  it('keeps a usable x-request-id from the router and replaces an unusable one', async () => {
    const kept = await post(subgraph, LOCATIONS, PATIENT, 'router-req-42');
    expect(kept.requestId).toBe('router-req-42');
    const replaced = await post(subgraph, LOCATIONS, PATIENT, 'no spaces or "quotes" please');
    expect(replaced.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('names a page chain that loops as broken_page_chain', async () => {
    let loopRef: unknown;
    subgraph.emulator.setEnvelopeRewriter((envelope, ctx) => {
      if (ctx.tenantId !== LOOPING.tenantId) return envelope;
      loopRef ??= envelope.next ?? undefined;
      return loopRef ? { ...envelope, has_more: true, next: loopRef } : envelope;
    });
    const before = subgraph.logs.length;
    const { body, requestId } = await post(subgraph, '{ locations(first: 50) { nodes { id } } }', LOOPING);
    expect(errorCodes(body)).toEqual(['UPSTREAM_BAD_RESPONSE']);
    const failures = lines({ ...subgraph, logs: subgraph.logs.slice(before) }).filter((line) => line.event === 'upstream_call_failed');
    expect(failures).toEqual([
      expect.objectContaining({ level: WARN, requestId, tenantId: LOOPING.tenantId, path: 'locations', origin: subgraph.emulator.shardUrls[0], cause: 'broken_page_chain', code: 'UPSTREAM_BAD_RESPONSE' }),
    ]);
  });

  it('names a refused api_base as address_refused, with no shard origin and no attempt', async () => {
    const refusing = await startTestSubgraph({}, { WFS_API_BASE_ALLOW: 'shard.example.com' }, {}, subgraph.emulator);
    try {
      const { body, requestId } = await post(refusing, LOCATIONS, PATIENT);
      expect(errorCodes(body)).toEqual(['UPSTREAM_MISCONFIGURED']);
      const failures = lines(refusing).filter((line) => line.event === 'upstream_call_failed');
      expect(failures).toEqual([
        expect.objectContaining({ level: WARN, requestId, tenantId: PATIENT.tenantId, list: 'locations', origin: 'none', cause: 'address_refused', attempts: 0, code: 'UPSTREAM_MISCONFIGURED' }),
      ]);
    } finally {
      await refusing.close();
    }
  });
});

describe('failure lines of the resilience mechanisms', () => {
  /** The failure lines a subgraph of its own (its own breakers, windows and budget) wrote for `tenant`. */
  const failuresOf = (own: TestSubgraph, tenant: EmulatorTenant) =>
    lines(own).filter((line) => line.event === 'upstream_call_failed' && line.tenantId === tenant.tenantId);

  it('names a request whose upstream call budget is spent as call_budget_spent', async () => {
    const own = await startTestSubgraph({}, { WFS_UPSTREAM_CALL_BUDGET: '1' }, {}, subgraph.emulator);
    try {
      // Pages of 2 records: the tenant's 4 locations take 2 calls, the budget allows 1.
      const { body, requestId } = await post(own, '{ locations(first: 50) { nodes { id } } }', PATIENT);
      expect(errorCodes(body)).toEqual(['UPSTREAM_BAD_RESPONSE']);
      expect(failuresOf(own, PATIENT)).toEqual([expect.objectContaining({ level: WARN, requestId, list: 'locations', cause: 'call_budget_spent', code: 'UPSTREAM_BAD_RESPONSE' })]);
    } finally {
      await own.close();
    }
  });

  it('names a query refused inside a shard\'s Retry-After window as retry_after_window', async () => {
    const own = await startTestSubgraph({}, {}, {}, subgraph.emulator);
    try {
      subgraph.emulator.injectFault({ endpoint: 'locations', status: 503, headers: { 'retry-after': '3600' }, tenantId: PATIENT.tenantId });
      expect(errorCodes((await post(own, LOCATIONS, PATIENT)).body)).toEqual(['UPSTREAM_UNAVAILABLE']);
      const calls = subgraph.emulator.counters.listRequests.locations;
      const { body, requestId } = await post(own, LOCATIONS, PATIENT);
      expect(errorCodes(body)).toEqual(['UPSTREAM_UNAVAILABLE']);
      expect(subgraph.emulator.counters.listRequests.locations).toBe(calls);
      expect(failuresOf(own, PATIENT).at(-1)).toEqual(expect.objectContaining({ level: WARN, requestId, list: 'locations', cause: 'retry_after_window', code: 'UPSTREAM_UNAVAILABLE' }));
    } finally {
      await own.close();
    }
  });

  it('names a query refused by an open shard breaker as breaker_open', async () => {
    const own = await startTestSubgraph({}, {}, {}, subgraph.emulator);
    try {
      subgraph.emulator.injectFault({ endpoint: 'locations', status: 500, times: Infinity, tenantId: FAILING.tenantId });
      // Each query makes two attempts (one retry); five failures in a row open the breaker.
      for (let query = 0; query < 3; query += 1) expect(errorCodes((await post(own, LOCATIONS, FAILING)).body)).toEqual(['UPSTREAM_UNAVAILABLE']);
      const calls = subgraph.emulator.counters.listRequests.locations;
      const { body, requestId } = await post(own, LOCATIONS, FAILING);
      expect(errorCodes(body)).toEqual(['UPSTREAM_UNAVAILABLE']);
      expect(subgraph.emulator.counters.listRequests.locations).toBe(calls);
      expect(failuresOf(own, FAILING).at(-1)).toEqual(expect.objectContaining({ level: WARN, requestId, list: 'locations', cause: 'breaker_open', code: 'UPSTREAM_UNAVAILABLE' }));
    } finally {
      await own.close();
    }
  });
});

describe('client disconnects', () => {
  it('counts 50 clients that leave mid-flight as aborted: no upstream failure, no GraphQL error', async () => {
    const clients = 50;
    // Warm the token, so every request below is waiting on the (hanging) list call.
    expect(errorCodes(await subgraph.query(LOCATIONS, {}, { 'x-tenant-id': PATIENT.tenantId }))).toEqual([]);
    const before = parseSamples(await scrapeText(subgraph.server.url));
    subgraph.emulator.resetCounters();
    subgraph.emulator.injectFault({ endpoint: 'locations', hang: true, times: Infinity, tenantId: PATIENT.tenantId });

    const controllers = Array.from({ length: clients }, () => new AbortController());
    // Numbered texts: identical requests would share one execution and never reach the coalescer.
    const pending = controllers.map((controller, i) =>
      request(subgraph.server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-tenant-id': PATIENT.tenantId },
        body: JSON.stringify({ query: `# ${i}\n${LOCATIONS}` }),
        signal: controller.signal,
      }).then(
        () => 'answered',
        () => 'aborted',
      ),
    );
    // Every request is waiting on the upstream before the clients leave: one call in flight
    // there, which the other 49 identical requests share (in-flight coalescing).
    await waitFor(async () => subgraph.emulator.counters.listRequests.locations >= 1 && (await scrapeTotalOf('wfs_upstream_coalesced_total')) - total(before, 'wfs_upstream_coalesced_total') >= clients - 1, 'the coalesced calls to be counted');
    for (const controller of controllers) controller.abort();
    expect(new Set(await Promise.all(pending))).toEqual(new Set(['aborted']));
    await waitFor(async () => (await scrapeTotalOf('wfs_graphql_requests_aborted_total')) - total(before, 'wfs_graphql_requests_aborted_total') >= clients, 'every aborted request to be counted');

    const after = parseSamples(await scrapeText(subgraph.server.url));
    const delta = (name: string, where: Record<string, string | RegExp> = {}) => total(after, name, where) - total(before, name, where);
    const deltas = {
      upstreamAttemptsCounted: delta('wfs_upstream_requests_total'),
      upstreamFailures: delta('wfs_upstream_calls_total', { outcome: /^(?!ok$|aborted$)/ }),
      upstreamAborted: delta('wfs_upstream_calls_total', { outcome: 'aborted' }),
      graphqlErrors: delta('wfs_graphql_errors_total'),
      graphqlAborted: delta('wfs_graphql_requests_aborted_total'),
      inFlight: total(after, 'wfs_graphql_requests_in_flight'),
    };
    expect(deltas).toEqual({ upstreamAttemptsCounted: 0, upstreamFailures: 0, upstreamAborted: clients, graphqlErrors: 0, graphqlAborted: clients, inFlight: 0 });
    expect(lines(subgraph).filter((line) => line.event === 'upstream_call_failed' && line.tenantId === PATIENT.tenantId)).toEqual([]);
  });
});

describe('clients that leave while sending their body', () => {
  it('are counted as aborted and logged at debug only: five aborted uploads write no error line', async () => {
    const uploads = 5;
    const before = parseSamples(await scrapeText(subgraph.server.url));
    const logsBefore = subgraph.logs.length;
    const { port } = new URL(subgraph.server.url);
    for (let i = 0; i < uploads; i += 1) {
      // Headers promise a larger body than is sent; the client then goes away mid-body.
      const socket = connect(Number(port), '127.0.0.1');
      await once(socket, 'connect');
      socket.write(`POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-tenant-id: ${PATIENT.tenantId}\r\ncontent-length: 100000\r\n\r\n{"query":"{ loc`);
      await waitFor(async () => (await scrapeTotalOf('wfs_graphql_requests_in_flight')) >= 1, 'a request in flight');
      socket.destroy();
      await waitFor(async () => (await scrapeTotalOf('wfs_graphql_requests_aborted_total')) - total(before, 'wfs_graphql_requests_aborted_total') >= i + 1, 'the aborted request to be counted');
    }
    const written = lines({ ...subgraph, logs: subgraph.logs.slice(logsBefore) });
    expect(written.filter((line) => line.level > WARN)).toEqual([]);
    expect(written.filter((line) => line.level === DEBUG && /closed the connection while sending its body/.test(line.msg))).toHaveLength(uploads);
    expect(await scrapeTotalOf('wfs_graphql_requests_in_flight')).toBe(0);
  });
});

async function scrapeTotalOf(name: string, where: Record<string, string | RegExp> = {}): Promise<number> {
  return total(parseSamples(await scrapeText(subgraph.server.url)), name, where);
}

describe('a closed server', () => {
  it('stops observing the process: its GC histogram counts no collection after close() (prom-client alone never stopped, and kept the server)', async () => {
    const own = await startTestSubgraph();
    await waitFor(async () => {
      allocate();
      return (await gcCounted(own.server.metrics.registry)) > 0;
    }, 'a garbage collection counted while the server runs');
    await own.close();
    const counted = await gcCounted(own.server.metrics.registry);
    await collectSeen(exposedGc());
    expect(await gcCounted(own.server.metrics.registry)).toBe(counted);
  });
});
