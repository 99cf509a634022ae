import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * Upstream faults over real HTTP against the emulator (two shards): the shard circuit
 * breaker (issue 7) and Retry-After windows on 429 and 503 (issue 11 item 3).
 */

const QUERY = '{ locations(first: 5) { nodes { id } } }';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function timedQuery(subgraph: TestSubgraph, tenantId: string) {
  const started = performance.now();
  const response = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenantId });
  return { ms: performance.now() - started, response };
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
    const breakerState = async () => (await subgraph.server.metrics.resilience.breakerState.get()).values.find((v) => v.labels.origin === shard0)?.value ?? 0;

    // Warm: tokens cached, connections open; the healthy shard's latency before the fault.
    for (const tenant of [failing, neighbour]) expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant }))).toEqual([]);
    const before: number[] = [];
    for (let i = 0; i < 15; i += 1) before.push((await timedQuery(subgraph, healthy)).ms);

    for (const tenantId of [failing, neighbour]) subgraph.emulator.injectFault({ endpoint: 'locations', tenantId, status: 500, times: Infinity });
    // Each failing query costs 1 call and up to 2 jittered retries: five failures in a row open the breaker.
    await waitFor(async () => {
      const { response } = await timedQuery(subgraph, failing);
      expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
      return (await breakerState()) === 1;
    }, 'the breaker of shard 0 to open');

    const callsWhenOpened = subgraph.emulator.counters.requestsByShard[0]!;
    const fast: number[] = [];
    const during: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      for (const tenant of [failing, neighbour]) {
        const { ms, response } = await timedQuery(subgraph, tenant);
        expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
        expect(response.errors![0]!.message).toContain('circuit breaker open');
        // The shard's host is for the operator's log, not for API clients.
        expect(response.errors![0]!.message).not.toContain(new URL(shard0).host);
        fast.push(ms);
      }
      const { ms, response } = await timedQuery(subgraph, healthy);
      expect(errorCodes(response)).toEqual([]);
      during.push(ms);
    }
    // Failing fast means no call reached the failing shard (unless the pause ran out on a very slow machine: one probe).
    expect(subgraph.emulator.counters.requestsByShard[0]! - callsWhenOpened).toBeLessThanOrEqual(1);
    expect(median(fast)).toBeLessThan(50);
    // The other shard's tenants keep their latency (a generous bound: loaded shared machine).
    expect(median(during)).toBeLessThan(Math.max(5 * median(before), 50));
    expect(await counterTotal(subgraph.server.metrics.resilience.failFast, { reason: 'breaker' })).toBeGreaterThanOrEqual(20);

    // Healed: after the pause a probe goes through and the breaker closes by itself.
    subgraph.emulator.clearFaults();
    await waitFor(async () => errorCodes((await timedQuery(subgraph, failing)).response).length === 0, 'the shard to be served again', OPEN_MS * 10);
    expect(await breakerState()).toBe(0);
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour }))).toEqual([]);
    const transitions = (await subgraph.server.metrics.resilience.breakerTransitions.get()).values.filter((v) => v.labels.origin === shard0);
    expect(transitions.map((v) => v.labels.state).sort()).toEqual(['closed', 'half-open', 'open']);
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
    const { ms, response } = await timedQuery(subgraph, tenant);
    expect(errorCodes(response)).toEqual([]);
    expect(calls(tenant)).toBe(2);
    expect(ms).toBeGreaterThanOrEqual(900); // it did wait the second it was asked to
    expect(await counterTotal(subgraph.server.metrics.resilience.retries, { reason: 'retry-after' })).toBe(1);
  });

  it('fails fast on a 503 with a large Retry-After, and later queries for that shard fail fast without calling it', async () => {
    const [tenant, neighbour] = shardTenants(subgraph, 0) as [string, string];
    const [elsewhere] = shardTenants(subgraph, 1) as [string];
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, status: 503, headers: { 'retry-after': '3600' } });
    const first = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
    expect(errorCodes(first)).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(first.errors![0]!.extensions!.retryAfterSeconds).toBe(3600);
    expect(calls(tenant)).toBe(1);

    const shard0 = subgraph.emulator.counters.requestsByShard[0]!;
    const later = await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour });
    expect(errorCodes(later)).toEqual(['UPSTREAM_UNAVAILABLE']);
    const remaining = later.errors![0]!.extensions!.retryAfterSeconds as number;
    expect(remaining).toBeGreaterThan(3500);
    expect(remaining).toBeLessThanOrEqual(3600);
    expect(subgraph.emulator.counters.requestsByShard[0]).toBe(shard0);
    // The other shard is served.
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': elsewhere }))).toEqual([]);
  });

  it('fails fast on a 429 with a large Retry-After, and later queries of that tenant fail fast while other tenants are served', async () => {
    const [tenant, neighbour] = shardTenants(subgraph, 0) as [string, string];
    subgraph.emulator.injectFault({ endpoint: 'locations', tenantId: tenant, status: 429, headers: { 'retry-after': '3600' } });
    const first = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
    expect(errorCodes(first)).toEqual(['UPSTREAM_RATE_LIMITED']);
    expect(first.errors![0]!.extensions!.retryAfterSeconds).toBe(3600);
    for (let i = 0; i < 5; i += 1) {
      const later = await subgraph.query(QUERY, undefined, { 'x-tenant-id': tenant });
      expect(errorCodes(later)).toEqual(['UPSTREAM_RATE_LIMITED']);
      expect(later.errors![0]!.extensions!.retryAfterSeconds).toBeGreaterThan(3500);
    }
    expect(calls(tenant)).toBe(1);
    expect(errorCodes(await subgraph.query(QUERY, undefined, { 'x-tenant-id': neighbour }))).toEqual([]);
    expect(await counterTotal(subgraph.server.metrics.resilience.failFast, { reason: 'retry-after' })).toBe(5);
  });
});
