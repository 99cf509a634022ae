import { startEmulator, type Emulator } from '../../tools/emulator';
import { WfsClient } from '../../src/upstream/client';
import { NO_OBSERVER } from '../../src/upstream/observer';
import { createUpstreamAgent } from '../../src/upstream/transport/http';
import { locations } from '../../src/upstream/resources';
import { TokenCache } from '../../src/upstream/token/tokenCache';
import { requestToken } from '../../src/upstream/token/tokenEndpoint';
import { testTenant } from '../helpers/fixtures';
import { errorCodes, postGraphQL, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * Upstream faults over real HTTP against the emulator (two shards): the shard circuit
 * breaker, Retry-After windows on 429 and 503, a hanging shard, capped windows and
 * deadlines of shared calls (docs/limits.md, "Upstream faults and limits").
 */

const QUERY = '{ locations(first: 5) { nodes { id } } }';

function query(subgraph: TestSubgraph, tenantId: string) {
  return subgraph.query(QUERY, undefined, { 'x-tenant-id': tenantId });
}

function shardTenants(subgraph: TestSubgraph, shard: number): string[] {
  return subgraph.emulator.tenants.filter((t) => t.shard === shard).map((t) => t.tenantId);
}

describe('shard circuit breaker', () => {
  let subgraph: TestSubgraph;
  const OPEN_MS = 3_000;

  beforeAll(async () => {
    subgraph = await startTestSubgraph({}, { LOG_LEVEL: 'silent' }, { upstream: { breaker: { failuresToOpen: 5, openMs: OPEN_MS } } });
  });
  afterAll(() => subgraph?.close());

  it('opens on a shard failing 100 %, fails its tenants fast, leaves the other shard alone, and closes by itself', async () => {
    const [failing, neighbour] = shardTenants(subgraph, 0) as [string, string];
    const [healthy] = shardTenants(subgraph, 1) as [string];
    const shard0 = subgraph.emulator.shardUrls[0]!;
    const shard1 = subgraph.emulator.shardUrls[1]!;
    const breakerState = async (origin = shard0) => (await subgraph.server.metrics.resilience.breakerState.get()).values.find((v) => v.labels.origin === origin)?.value ?? 0;
    const { upstreamCalls } = subgraph.server.metrics;
    const shard1Calls = async () => ({ all: await counterTotal(upstreamCalls, { origin: shard1 }), ok: await counterTotal(upstreamCalls, { origin: shard1, outcome: 'ok' }) });

    // Warm: tokens cached, connections open.
    for (const tenant of [failing, neighbour, healthy]) expect(errorCodes(await query(subgraph, tenant))).toEqual([]);

    for (const tenantId of [failing, neighbour]) subgraph.emulator.injectFault({ endpoint: 'locations', tenantId, status: 500, times: Infinity });
    // Each failing query costs 1 call and up to 2 jittered retries: five failures in a row open the breaker.
    await waitFor(async () => {
      expect(errorCodes(await query(subgraph, failing))).toEqual(['UPSTREAM_UNAVAILABLE']);
      return (await breakerState()) === 1;
    }, 'the breaker of shard 0 to open');

    const callsWhenOpened = subgraph.emulator.counters.requestsByShard[0]!;
    const shard1Before = await shard1Calls();
    const failFastBefore = await counterTotal(subgraph.server.metrics.resilience.failFast, { reason: 'breaker' });
    for (let i = 0; i < 10; i += 1) {
      for (const tenant of [failing, neighbour]) {
        const response = await query(subgraph, tenant);
        expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
        expect(response.errors![0]!.message).toContain('circuit breaker open');
        // The shard's host is for the operator's log, not for API clients.
        expect(response.errors![0]!.message).not.toContain(new URL(shard0).host);
      }
      expect(errorCodes(await query(subgraph, healthy))).toEqual([]);
    }
    // Failing fast: refused by the breaker without a call to the failing shard, so nothing
    // waits on it (unless the pause ran out on a very slow machine: one probe).
    expect(subgraph.emulator.counters.requestsByShard[0]! - callsWhenOpened).toBeLessThanOrEqual(1);
    expect((await counterTotal(subgraph.server.metrics.resilience.failFast, { reason: 'breaker' })) - failFastBefore).toBeGreaterThanOrEqual(19);
    // The other shard is untouched: its breaker stays closed and every call to it succeeds.
    const shard1After = await shard1Calls();
    expect(shard1After.all - shard1Before.all).toBeGreaterThan(0);
    expect(shard1After.all - shard1Before.all).toBe(shard1After.ok - shard1Before.ok);
    expect(await breakerState(shard1)).toBe(0);

    // Healed: after the pause a probe goes through and the breaker closes by itself.
    subgraph.emulator.clearFaults();
    await waitFor(async () => errorCodes(await query(subgraph, failing)).length === 0, 'the shard to be served again', OPEN_MS * 10);
    expect(await breakerState()).toBe(0);
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour }))).toEqual([]);
    const transitions = (await subgraph.server.metrics.resilience.breakerTransitions.get()).values.filter((v) => v.labels.origin === shard0);
    expect(transitions.map((v) => v.labels.state).sort()).toEqual(['closed', 'half-open', 'open']);
  });
});

describe('a hanging shard', () => {
  let subgraph: TestSubgraph;
  const OPEN_MS = 2_000;
  const tenants = (['a', 'b', 'c', 'd', 'e', 'f'] as const).map((letter) => testTenant(letter, { locations: 3, shifts: 0 }));
  const hanging = tenants.filter((t) => t.shard === 0).map((t) => t.tenantId);
  const healthy = tenants.filter((t) => t.shard === 1).map((t) => t.tenantId);

  beforeAll(async () => {
    // A short attempt timeout: a hanging attempt costs 300 ms here, not 8 s.
    subgraph = await startTestSubgraph({ tenants }, { LOG_LEVEL: 'silent', WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS: '300' }, { upstream: { breaker: { openMs: OPEN_MS } } });
  });
  afterAll(() => subgraph?.close());

  it('opens the breaker on attempts that run out of time: later queries fail fast with one probe per open window, the other shard is served, and it heals by itself', async () => {
    const shard0 = subgraph.emulator.shardUrls[0]!;
    const breakerState = async () => (await subgraph.server.metrics.resilience.breakerState.get()).values.find((v) => v.labels.origin === shard0)?.value ?? 0;
    const calls = () => subgraph.emulator.counters.requestsByShard[0]!;
    for (const tenant of tenants) expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant.tenantId }))).toEqual([]);
    for (const tenantId of hanging) subgraph.emulator.injectFault({ endpoint: 'locations', tenantId, hang: true, times: Infinity });
    const callsBefore = calls();

    // 8 concurrent queries of the hanging shard's companies: each attempt runs out of its time.
    const first = await Promise.all(Array.from({ length: 8 }, (_, i) => subgraph.query(QUERY, undefined, { 'x-tenant-id': hanging[i % hanging.length]! })));
    for (const response of first) expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
    // Three companies, one shared call each, one retry each: at most six timed-out attempts, and five open the breaker.
    expect(await breakerState()).toBe(1);
    expect(calls() - callsBefore).toBeLessThanOrEqual(6);
    expect(await counterTotal(subgraph.server.metrics.upstreamCalls, { outcome: 'timeout' })).toBeGreaterThanOrEqual(3);

    const opened = performance.now();
    const callsWhenOpened = calls();
    for (let i = 0; i < 5; i += 1) {
      for (const tenantId of hanging) {
        const response = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenantId });
        expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
      }
      // The other shard keeps being served.
      for (const tenantId of healthy) expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenantId }))).toEqual([]);
    }
    // At most one probe per open window that ended meanwhile (none on a fast machine).
    const windows = Math.floor((performance.now() - opened) / OPEN_MS);
    expect(calls() - callsWhenOpened).toBeLessThanOrEqual(windows);
    expect(await counterTotal(subgraph.server.metrics.resilience.failFast, { reason: 'breaker' })).toBeGreaterThanOrEqual(15 - windows);

    // Healed: once the shard answers, the next probe closes the breaker by itself.
    subgraph.emulator.clearFaults();
    await waitFor(async () => errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': hanging[0]! })).length === 0, 'the shard to be served again', OPEN_MS * 10);
    expect(await breakerState()).toBe(0);
    for (const tenantId of hanging) expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenantId }))).toEqual([]);
  });
});

describe('a request that joins a shared call', () => {
  let emulator: Emulator;
  beforeAll(async () => {
    emulator = await startEmulator();
  });
  afterAll(() => emulator?.close());

  it('keeps its own deadline: the call retries for it after the request that started it has gone', async () => {
    const tenant = emulator.tenants[0]!;
    const dispatcher = createUpstreamAgent();
    const tokens = new TokenCache({
      tenants: [{ tenantId: tenant.tenantId, clientId: tenant.clientId, clientSecret: tenant.clientSecret, scope: tenant.grantedScopes.join(' ') }],
      fetchToken: (credentials) => requestToken(credentials, { authUrl: emulator.authUrl, dispatcher, apiBaseAllow: [] }),
    });
    const attempts: string[] = [];
    const client = new WfsClient({ tokens, dispatcher, attemptTimeoutMs: 800, retry: { initialDelayMs: 1 }, observer: { ...NO_OBSERVER, upstreamAttempt: (_call, attempt) => void attempts.push(attempt.outcome) } });
    try {
      await client.listPage(tenant.tenantId, locations); // a token, and a warm connection
      emulator.injectFault({ endpoint: 'locations', tenantId: tenant.tenantId, hang: true });
      const calls = emulator.counters.listRequests.locations;
      // The starter has 300 ms; the first attempt hangs until its own timeout (800 ms).
      const starter = client.listPage(tenant.tenantId, locations, { budget: client.budgetFor(AbortSignal.timeout(300), 300) }).catch((error: unknown) => error);
      await waitFor(() => emulator.counters.listRequests.locations === calls + 1, 'the first attempt to reach the shard');
      // The joiner's budget is long; its signal never needs to fire (no timer left behind).
      const joiner = client.listPage(tenant.tenantId, locations, { budget: client.budgetFor(new AbortController().signal, 20_000) });
      await expect(starter).resolves.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
      await expect(joiner).resolves.toMatchObject({ items: expect.any(Array) });
      expect(emulator.counters.listRequests.locations).toBe(calls + 2);
      expect(attempts.slice(-2)).toEqual(['timeout', 'ok']);
    } finally {
      await dispatcher.close();
    }
  });
});

describe('the failure line of a request that joined a shared call', () => {
  let subgraph: TestSubgraph;
  beforeAll(async () => {
    subgraph = await startTestSubgraph({}, { LOG_LEVEL: 'warn', WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS: '300' });
  });
  afterAll(() => subgraph?.close());

  it("names the call's attempts and shard, not 'attempts: 0, origin: none', and counts each attempt once", async () => {
    const [tenant] = shardTenants(subgraph, 0) as [string];
    const shard0 = subgraph.emulator.shardUrls[0]!;
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant }))).toEqual([]);
    const requestsBefore = await counterTotal(subgraph.server.metrics.upstreamRequests, { origin: shard0 });
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, hang: true, times: 2 });
    const calls = subgraph.emulator.counters.requestsByShard[0]!;
    const leaving = new AbortController();
    const starter = postGraphQL(subgraph.server.url, { query: QUERY }, { 'x-tenant-id': tenant }, leaving.signal).catch((error: unknown) => error);
    await waitFor(() => subgraph.emulator.counters.requestsByShard[0] === calls + 1, 'the first attempt to reach the shard');
    const coalesced = await counterTotal(subgraph.server.metrics.upstreamCoalesced);
    // Another text: an identical request would share the starter's execution, not join its call.
    const joiner = subgraph.query(`# joiner\n${QUERY}`, undefined, { 'x-tenant-id': tenant });
    await waitFor(async () => (await counterTotal(subgraph.server.metrics.upstreamCoalesced)) === coalesced + 1, 'the second request to join');
    leaving.abort(); // the request that started the call goes away; the joiner stays
    await starter;
    expect(errorCodes(await joiner)).toEqual(['UPSTREAM_UNAVAILABLE']);
    const lines = subgraph.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.event === 'upstream_call_failed' && line.tenantId === tenant);
    expect(lines).toEqual([expect.objectContaining({ origin: shard0, attempts: 2, cause: 'timeout', code: 'UPSTREAM_UNAVAILABLE' })]);
    expect((await counterTotal(subgraph.server.metrics.upstreamRequests, { origin: shard0 })) - requestsBefore).toBe(2);
  });
});

describe('Retry-After on 429 and 503', () => {
  let subgraph: TestSubgraph;
  beforeEach(async () => {
    subgraph = await startTestSubgraph({}, { LOG_LEVEL: 'silent' });
  });
  afterEach(() => subgraph?.close());

  const calls = (tenantId: string) => subgraph.emulator.counters.listRequestsByTenant[tenantId]?.locations ?? 0;

  it('waits out a 503 with a small Retry-After within the request, then serves', async () => {
    const [tenant] = shardTenants(subgraph, 0) as [string];
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, status: 503, headers: { 'retry-after': '1' } });
    const started = performance.now();
    const response = await query(subgraph, tenant);
    expect(errorCodes(response)).toEqual([]);
    expect(calls(tenant)).toBe(2);
    // Time is the subject here: a lower bound, it did wait the second it was asked to.
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    expect(await counterTotal(subgraph.server.metrics.resilience.retries, { reason: 'retry-after' })).toBe(1);
  });

  it('fails fast on a 503 with a large Retry-After, and later queries for that shard fail fast without calling it, within the capped window', async () => {
    const [tenant, neighbour] = shardTenants(subgraph, 0) as [string, string];
    const [elsewhere] = shardTenants(subgraph, 1) as [string];
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, status: 503, headers: { 'retry-after': '3600' } });
    const first = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
    expect(errorCodes(first)).toEqual(['UPSTREAM_UNAVAILABLE']);
    // The window we keep is capped at a minute (WFS_SHARD_RETRY_AFTER_MAX_S), and that is what the client is told.
    expect(first.errors![0]!.extensions!.retryAfterSeconds).toBe(60);
    expect(calls(tenant)).toBe(1);

    const shard0 = subgraph.emulator.counters.requestsByShard[0]!;
    const later = await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour });
    expect(errorCodes(later)).toEqual(['UPSTREAM_UNAVAILABLE']);
    const remaining = later.errors![0]!.extensions!.retryAfterSeconds as number;
    expect(remaining).toBeGreaterThan(50);
    expect(remaining).toBeLessThanOrEqual(60);
    expect(subgraph.emulator.counters.requestsByShard[0]).toBe(shard0);
    // The other shard is served.
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': elsewhere }))).toEqual([]);
  });

  it('fails fast on a 429 with a large Retry-After, and later queries of that tenant fail fast while other tenants are served', async () => {
    const [tenant, neighbour] = shardTenants(subgraph, 0) as [string, string];
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, status: 429, headers: { 'retry-after': '3600' } });
    const first = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
    expect(errorCodes(first)).toEqual(['UPSTREAM_RATE_LIMITED']);
    // Capped at 5 minutes (WFS_TENANT_RETRY_AFTER_MAX_S).
    expect(first.errors![0]!.extensions!.retryAfterSeconds).toBe(300);
    for (let i = 0; i < 5; i += 1) {
      const later = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
      expect(errorCodes(later)).toEqual(['UPSTREAM_RATE_LIMITED']);
      expect(later.errors![0]!.extensions!.retryAfterSeconds).toBeGreaterThan(290);
      expect(later.errors![0]!.extensions!.retryAfterSeconds).toBeLessThanOrEqual(300);
    }
    expect(calls(tenant)).toBe(1);
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour }))).toEqual([]);
    expect(await counterTotal(subgraph.server.metrics.resilience.failFast, { reason: 'retry-after' })).toBe(5);
  });
});

describe('capped Retry-After windows', () => {
  let subgraph: TestSubgraph;
  /** The subgraph's clock: real time plus what the test has skipped. */
  let skipped = 0;
  beforeEach(async () => {
    skipped = 0;
    subgraph = await startTestSubgraph({}, { LOG_LEVEL: 'silent' }, { now: () => Date.now() + skipped });
  });
  afterEach(() => subgraph?.close());

  it('heals a shard that sent Retry-After: 31536000 once the capped minute is over: one probe decides', async () => {
    const [tenant, neighbour] = shardTenants(subgraph, 0) as [string, string];
    for (const tenantId of [tenant, neighbour]) expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenantId }))).toEqual([]);
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, status: 503, headers: { 'retry-after': '31536000' } });
    const first = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
    expect(first.errors![0]!.extensions).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', retryAfterSeconds: 60 });
    const shard0 = subgraph.emulator.counters.requestsByShard[0]!;
    skipped = 59_000;
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour }))).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(subgraph.emulator.counters.requestsByShard[0]).toBe(shard0);
    // The shard is back: after the capped minute, the first query is the probe, and it is served.
    skipped = 60_001;
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour }))).toEqual([]);
    expect(subgraph.emulator.counters.requestsByShard[0]).toBe(shard0 + 1);
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant }))).toEqual([]);
  });

  it('opens a new capped window when the probe gets another 503', async () => {
    const [tenant, neighbour] = shardTenants(subgraph, 0) as [string, string];
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, status: 503, headers: { 'retry-after': '3600' }, times: 2 });
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant }))).toEqual(['UPSTREAM_UNAVAILABLE']);
    skipped = 60_001;
    const probe = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
    expect(probe.errors![0]!.extensions).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', retryAfterSeconds: 60 });
    expect(subgraph.emulator.counters.listRequestsByTenant[tenant]!.locations).toBe(2);
    const shard0 = subgraph.emulator.counters.requestsByShard[0]!;
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour }))).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(subgraph.emulator.counters.requestsByShard[0]).toBe(shard0);
  });

  it('caps a tenant (429) window too, then probes', async () => {
    const [tenant] = shardTenants(subgraph, 0) as [string];
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, status: 429, headers: { 'retry-after': '86400' } });
    const first = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
    expect(first.errors![0]!.extensions).toMatchObject({ code: 'UPSTREAM_RATE_LIMITED', retryAfterSeconds: 300 });
    skipped = 300_001;
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant }))).toEqual([]);
  });
});
