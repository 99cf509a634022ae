import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EmulatorTenant } from '../../tools/emulator';
import { as, testTenant } from '../helpers/fixtures';
import { errorCodes, listsCalled, startTestSubgraph, writeTenantsFile, type TestSubgraph } from '../helpers/subgraph';

const A = testTenant('a', { secret: 'secret-a-7f3e9c1d', scopes: ['shifts.read'], locations: 35, shifts: 120 });
const B = testTenant('b', { secret: 'secret-b-2a8d4f6e', scopes: ['shifts.read'], locations: 20, shifts: 100 });
const C = testTenant('c', { secret: 'secret-c-9b1e7a3c', scopes: [], locations: 3, shifts: 5 });
const tenants: EmulatorTenant[] = [A, B, C];

const LOCATIONS_PAGE = `query ($first: Int, $after: String, $last: Int, $before: String) {
  locations(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { id name } }
    nodes { id }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

let subgraph: TestSubgraph;
afterEach(async () => {
  await subgraph?.close();
});

describe('token flow', () => {
  it('serves 200 concurrent queries for one tenant with exactly one token request', async () => {
    subgraph = await startTestSubgraph({ tenants });
    const responses = await Promise.all(Array.from({ length: 200 }, () => subgraph.query('{ locations(first: 5) { nodes { id } } }', {}, as(A))));
    expect(responses.every((r) => r.data?.locations?.nodes?.length === 5)).toBe(true);
    expect(subgraph.emulator.counters.tokenRequests).toBe(1);
  });

  it('fetches exactly one more token after expiry', async () => {
    // One clock for the emulator and the subgraph, moved by the test instead of waited for.
    let clock = Date.now();
    const now = () => clock;
    subgraph = await startTestSubgraph({ tenants, tokenLifetimeSeconds: 2, now }, {}, { now });
    await subgraph.query('{ locations(first: 1) { nodes { id } } }', {}, as(A));
    expect(subgraph.emulator.counters.tokenRequests).toBe(1);
    clock += 2_100;
    const after = await subgraph.query('{ locations(first: 1) { nodes { id } } }', {}, as(A));
    expect(after.errors).toBeUndefined();
    expect(subgraph.emulator.counters.tokenRequests).toBe(2);
  });

  it('recovers from a shard move with revoked tokens with exactly one more token request', async () => {
    subgraph = await startTestSubgraph({ tenants });
    await subgraph.query('{ locations(first: 1) { nodes { id } } }', {}, as(A));
    subgraph.emulator.moveTenant(A.tenantId, 1);
    subgraph.emulator.revokeTokens(A.tenantId);
    const responses = await Promise.all(Array.from({ length: 20 }, () => subgraph.query('{ locations(first: 3) { nodes { id } } }', {}, as(A))));
    expect(responses.every((r) => r.errors === undefined && r.data.locations.nodes.length === 3)).toBe(true);
    expect(subgraph.emulator.counters.tokenRequests).toBe(2);
    expect(subgraph.emulator.counters.requestsByShard[1]).toBeGreaterThan(0);
  });

  it('fails a persistent 401 with UPSTREAM_UNAUTHORIZED after at most 2 token requests', async () => {
    subgraph = await startTestSubgraph({ tenants });
    subgraph.emulator.injectFault({ endpoint: 'locations', status: 401, times: 100 });
    const response = await subgraph.query('{ locations { nodes { id } } }', {}, as(A));
    expect(errorCodes(response)).toEqual(['UPSTREAM_UNAUTHORIZED']);
    expect(response.data).toEqual({ locations: null });
    expect(subgraph.emulator.counters.tokenRequests).toBeLessThanOrEqual(2);
    expect(subgraph.emulator.counters.listRequests.locations).toBe(2);
  });

  it('reports refused credentials clearly, does not hammer the token endpoint, and never leaks the secret', async () => {
    const wrong = { ...A, clientSecret: 'definitely-wrong-secret-123' };
    subgraph = await startTestSubgraph({ tenants }, { WFS_TENANTS_FILE: writeTenantsFile([wrong]) });
    const responses = await Promise.all(Array.from({ length: 10 }, () => subgraph.query('{ locations { nodes { id } } }', {}, as(A))));
    for (const response of responses) expect(errorCodes(response)).toEqual(['UPSTREAM_UNAUTHORIZED']);
    expect(subgraph.emulator.counters.tokenRequests).toBe(1);
    const everything = JSON.stringify(responses) + subgraph.logs.join('');
    expect(everything).not.toContain('definitely-wrong-secret-123');
    expect(subgraph.logs.join('')).toContain('configuration error');
  });
});

describe('tenants and scopes', () => {
  it('keeps two tenants on two shards apart: own data, own host', async () => {
    subgraph = await startTestSubgraph({ tenants });
    const [a, b] = await Promise.all([
      subgraph.query('{ locations(first: 100) { nodes { id } } shifts(first: 100) { nodes { id location { id } } } }', {}, as(A)),
      subgraph.query('{ locations(first: 100) { nodes { id } } shifts(first: 100) { nodes { id location { id } } } }', {}, as(B)),
    ]);
    const idsA = new Set(A.locations.map((l) => l.id));
    const idsB = new Set(B.locations.map((l) => l.id));
    expect(a.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(A.locations.map((l) => l.id));
    expect(b.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(B.locations.map((l) => l.id));
    expect(a.data.shifts.nodes.every((s: { location: { id: string } }) => idsA.has(s.location.id))).toBe(true);
    expect(b.data.shifts.nodes.every((s: { location: { id: string } }) => idsB.has(s.location.id))).toBe(true);
    expect(subgraph.emulator.counters.listRequestsByTenant[A.tenantId]).toBeDefined();
    expect(subgraph.emulator.counters.requestsByShard[0]).toBeGreaterThan(0);
    expect(subgraph.emulator.counters.requestsByShard[1]).toBeGreaterThan(0);
    expect(subgraph.emulator.counters.unauthorized).toBe(0);
  });

  it('answers locations and a FORBIDDEN shifts field for a tenant without shifts.read, with no shifts call', async () => {
    subgraph = await startTestSubgraph({ tenants });
    const response = await subgraph.query('{ locations { nodes { id } } shifts { nodes { id } } }', {}, as(C));
    expect(response.data.locations.nodes).toHaveLength(3);
    expect(response.data.shifts).toBeNull();
    expect(errorCodes(response)).toEqual(['FORBIDDEN']);
    expect(response.errors![0]!.path).toEqual(['shifts']);
    expect(subgraph.emulator.counters.listRequests.shifts).toBe(0);
  });

  it('refuses a request without a tenant (UNAUTHENTICATED) and an unknown tenant (FORBIDDEN), without upstream calls', async () => {
    subgraph = await startTestSubgraph({ tenants });
    expect(errorCodes(await subgraph.query('{ locations { nodes { id } } }'))).toEqual(['UNAUTHENTICATED']);
    expect(errorCodes(await subgraph.query('{ locations { nodes { id } } }', {}, { 'x-tenant-id': 'someone-else' }))).toEqual(['FORBIDDEN']);
    expect(subgraph.emulator.counters.tokenRequests).toBe(0);
  });

  it('answers the router\'s _service query without a tenant', async () => {
    subgraph = await startTestSubgraph({ tenants });
    const response = await subgraph.query('{ _service { sdl } }');
    expect(response.data._service.sdl).toContain('type Location');
  });
});

describe.each(['absolute', 'relative', 'token'] as const)('Relay paging with %s page references', (format) => {
  it('walks a 35-item list with first: 10, visiting every id once, in order', async () => {
    subgraph = await startTestSubgraph({ tenants, pageReferenceFormat: format, maxPageSize: 8 });
    const seen: string[] = [];
    let after: string | null = null;
    let rounds = 0;
    for (;;) {
      const response: any = await subgraph.query(LOCATIONS_PAGE, { first: 10, after }, as(A));
      expect(response.errors).toBeUndefined();
      seen.push(...response.data.locations.edges.map((e: { node: { id: string } }) => e.node.id));
      rounds += 1;
      if (!response.data.locations.pageInfo.hasNextPage) break;
      after = response.data.locations.pageInfo.endCursor;
      expect(rounds).toBeLessThan(10);
    }
    expect(seen).toEqual(A.locations.map((l) => l.id));
    expect(subgraph.emulator.counters.lastListQueries.every((q) => q.includes('page_size='))).toBe(true);
  });

  it('resumes right after a mid-page edge cursor, and pages backward', async () => {
    subgraph = await startTestSubgraph({ tenants, pageReferenceFormat: format, maxPageSize: 8 });
    const first = await subgraph.query(LOCATIONS_PAGE, { first: 20 }, as(A));
    const edges = first.data.locations.edges;
    const resumed = await subgraph.query(LOCATIONS_PAGE, { first: 5, after: edges[11].cursor }, as(A));
    expect(resumed.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(A.locations.slice(12, 17).map((l) => l.id));
    const back = await subgraph.query(LOCATIONS_PAGE, { last: 10, before: edges[19].cursor }, as(A));
    expect(back.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(A.locations.slice(9, 19).map((l) => l.id));
    expect(back.data.locations.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
    const tail = await subgraph.query(LOCATIONS_PAGE, { last: 3 }, as(A));
    expect(tail.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(A.locations.slice(32).map((l) => l.id));
  });
});

describe('bad input', () => {
  it('refuses invalid, tampered and foreign cursors and bad sizes with BAD_USER_INPUT and zero upstream calls', async () => {
    subgraph = await startTestSubgraph({ tenants });
    const a = await subgraph.query(LOCATIONS_PAGE, { first: 2 }, as(A));
    const shifts = await subgraph.query('{ shifts(first: 1) { pageInfo { endCursor } } }', {}, as(A));
    const cursor: string = a.data.locations.pageInfo.endCursor;
    subgraph.emulator.resetCounters();
    const tampered = `${cursor.slice(0, 5)}${cursor[5] === 'A' ? 'B' : 'A'}${cursor.slice(6)}`;
    const cases: Array<[Record<string, unknown>, Record<string, string>]> = [
      [{ first: 2, after: 'not-a-cursor' }, as(A)],
      [{ first: 2, after: tampered }, as(A)],
      [{ first: 2, after: cursor }, as(B)],
      [{ first: 2, after: shifts.data.shifts.pageInfo.endCursor }, as(A)],
      [{ first: 0 }, as(A)],
      [{ first: 101 }, as(A)],
      [{ last: -1 }, as(A)],
      [{ first: 1, last: 1 }, as(A)],
    ];
    for (const [variables, headers] of cases) {
      const response = await subgraph.query(LOCATIONS_PAGE, variables, headers);
      expect(errorCodes(response)).toEqual(['BAD_USER_INPUT']);
    }
    expect(listsCalled(subgraph.emulator.counters.listRequests)).toEqual({});
  });
});

describe('hostile upstream', () => {
  let elsewhere: Server;
  let hits = 0;
  beforeEach(async () => {
    hits = 0;
    elsewhere = createServer((req, res) => {
      hits += 1;
      res.end(JSON.stringify({ object: 'list', data: [], has_more: false, next: null, previous: null, auth: req.headers.authorization }));
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    elsewhere.closeAllConnections();
    await new Promise((resolve) => elsewhere.close(resolve));
  });

  it('never follows a next reference to another origin', async () => {
    subgraph = await startTestSubgraph({ tenants, maxPageSize: 5 });
    const port = (elsewhere.address() as AddressInfo).port;
    subgraph.emulator.setEnvelopeRewriter((envelope) => ({ ...envelope, next: envelope.next ? `http://127.0.0.1:${port}/api/public/v1/locations/?cursor=steal` : null }));
    const response = await subgraph.query(LOCATIONS_PAGE, { first: 20 }, as(A));
    expect(errorCodes(response)).toEqual(['UPSTREAM_BAD_RESPONSE']);
    expect(hits).toBe(0);
  });

  it('skips a malformed record with an error for that item, keeping the rest', async () => {
    subgraph = await startTestSubgraph({ tenants });
    subgraph.emulator.setEnvelopeRewriter((envelope) => ({ ...envelope, data: [{ object: 'location', name: 'no id' }, ...(envelope.data as unknown[])] }));
    const response = await subgraph.query('{ locations(first: 3) { nodes { id } } }', {}, as(B));
    expect(response.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(B.locations.slice(0, 3).map((l) => l.id));
    expect(errorCodes(response)).toEqual(['UPSTREAM_BAD_RESPONSE']);
  });

  it.each([
    [{ status: 500, times: 2 }, 'UPSTREAM_UNAVAILABLE'],
    [{ status: 429, headers: { 'retry-after': '3600' } }, 'UPSTREAM_RATE_LIMITED'],
    [{ status: 200, body: '{"object":"list","data":' }, 'UPSTREAM_BAD_RESPONSE'],
    [{ status: 200, body: '[]' }, 'UPSTREAM_BAD_RESPONSE'],
  ])('maps the fault %p to %s', async (fault, code) => {
    subgraph = await startTestSubgraph({ tenants });
    subgraph.emulator.injectFault({ endpoint: 'locations', ...fault });
    const response = await subgraph.query('{ locations { nodes { id } } }', {}, as(A));
    expect(errorCodes(response)).toEqual([code]);
    expect(response.data).toEqual({ locations: null });
  });
});

describe('lookup by id', () => {
  it('answers location(id) and shift(id), null for an id the company does not have', async () => {
    subgraph = await startTestSubgraph({ tenants });
    const shiftId = B.shifts[42]!.id;
    const response = await subgraph.query(
      `query ($l: ID!, $s: ID!) { known: location(id: $l) { id name } missing: location(id: "loc_nope") { id } shift(id: $s) { id start end location { id } user { id } } }`,
      { l: B.locations[7]!.id, s: shiftId },
      as(B),
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.known).toEqual({ id: B.locations[7]!.id, name: B.locations[7]!.name });
    expect(response.data.missing).toBeNull();
    expect(response.data.shift).toMatchObject({ id: shiftId, start: B.shifts[42]!.start, end: B.shifts[42]!.end, location: { id: B.shifts[42]!.location } });
    // Another tenant cannot look up B's records by id.
    const foreign = await subgraph.query('query ($l: ID!) { location(id: $l) { id } }', { l: B.locations[7]!.id }, as(A));
    expect(foreign.data.location).toBeNull();
  });
});

describe('batching', () => {
  it('resolves shifts(first: 100) { location { name } } over 20 locations with at most 3 list calls', async () => {
    subgraph = await startTestSubgraph({ tenants });
    const response = await subgraph.query('{ shifts(first: 100) { nodes { id location { name } } } }', {}, as(B));
    expect(response.errors).toBeUndefined();
    expect(response.data.shifts.nodes).toHaveLength(100);
    expect(response.data.shifts.nodes.every((s: { location: { name: string } | null }) => typeof s.location?.name === 'string')).toBe(true);
    const calls = subgraph.emulator.counters.listRequests;
    expect(calls.locations + calls.shifts).toBeLessThanOrEqual(3);
  });

  it('resolves _entities for 50 locations with at most 2 list calls, unknown ids as null', async () => {
    const big = testTenant('d', { secret: 'secret-d-5c2b8e1f', scopes: ['shifts.read'], locations: 150, shifts: 10 });
    subgraph = await startTestSubgraph({ tenants: [big] });
    const wanted = big.locations.filter((_, i) => i % 3 === 0).slice(0, 50).map((l) => l.id);
    const representations = [...wanted.map((id) => ({ __typename: 'Location', id })), { __typename: 'Location', id: 'loc_missing' }];
    const response = await subgraph.query('query ($r: [_Any!]!) { _entities(representations: $r) { ... on Location { id name } } }', { r: representations }, as(big));
    expect(response.errors).toBeUndefined();
    expect(response.data._entities.slice(0, 50).map((e: { id: string }) => e.id)).toEqual(wanted);
    expect(response.data._entities[50]).toBeNull();
    expect(subgraph.emulator.counters.listRequests.locations).toBeLessThanOrEqual(2);
  });
});
