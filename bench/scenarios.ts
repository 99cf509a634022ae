import type { BenchTenant } from './emulatorProcess';
import { LOCATIONS_PATH, SHIFTS_PATH, locationIdOf, type DirectClient, type UpstreamLocation, type UpstreamShift } from './rest';

/** Sends one GraphQL operation for a tenant; resolves to `data`, throws on any error. */
export type GraphQLCaller = (tenantId: string, query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => Promise<any>;

/** Every target a scenario can run against. */
export type TargetName = 'direct' | 'floor' | 'floor-f5' | 'proxy' | 'naive' | 'apollo' | 'subgraph' | 'subgraph-f5' | 'today' | 'today-f5';

/**
 * One timed request. It resolves to a digest of the answer (what the caller would
 * show), so the bench can check that all three targets return the same data.
 */
export type DigestJob = () => Promise<string>;

export interface Scenario {
  readonly name: string;
  /** What one request is, for the table's heading. */
  readonly description: string;
  /** The targets it runs against (floor and proxy serve only the locations list). */
  readonly targets: readonly TargetName[];
  /** Requests in flight; default BENCH_CONCURRENCY. */
  readonly concurrency?: number;
  /**
   * Spread the workers over this many tenants (default 2; 0: BENCH_TENANTS; 'per-worker':
   * one company of its own per worker, so nothing can be shared between requests).
   */
  readonly tenants?: number | 'per-worker';
  /**
   * Read exactly the emulator's first this many companies (it then holds at least one more,
   * for the same-data check), each by its own workers: with fewer companies than workers,
   * worker w reads company w mod this; with more, worker w reads companies w, w + n, w + 2n...
   * (n in flight) in turn, so no two workers share a company.
   */
  readonly companies?: number;
  /**
   * A scenario about what a server keeps between requests (docs/caching.md). Each server
   * target is started for it alone and stopped after it, so nothing kept from another
   * scenario serves it and no poller of a server keeps calling the upstream while another
   * target is measured; a worker keeps its place from the warm-up into the measured run;
   * and the measured run lasts BENCH_DURATION_S whatever BENCH_REQUESTS says (a run cut
   * short would end before the window expires what it kept, and count too few calls).
   */
  readonly cache?: true;
  /** Ratios against floor, naive and direct come from this scenario's rows (default: its own). */
  readonly baseline?: string;
  /** The job a worker runs against a GraphQL server (naive or subgraph). */
  graphql(call: GraphQLCaller, tenant: BenchTenant): DigestJob;
  /** The same work done by a client calling the upstream itself. */
  direct(client: DirectClient, tenant: BenchTenant): DigestJob;
}

function expectCount(what: string, actual: number, expected: number): void {
  if (actual !== expected) throw new Error(`${what}: expected ${expected} items, got ${actual}`);
}

const digestLocations = (items: ReadonlyArray<{ id: string; name: string } | null>) => JSON.stringify(items.map((l) => (l ? [String(l.id), l.name] : null)));

/** 20 location ids spread over the whole list, so a scan has to reach its end. */
export function spreadLocationIds(tenant: BenchTenant, count = 20): string[] {
  const ids = tenant.locationIds;
  return Array.from({ length: count }, (_, i) => ids[Math.floor(((i + 1) * ids.length) / count) - 1]!);
}

const LOCATIONS_QUERY = 'query BenchLocations { locations(first: 100) { nodes { id name } } }';
const ALL: readonly TargetName[] = ['direct', 'floor', 'proxy', 'naive', 'subgraph'];
const GRAPHQL_SERVERS: readonly TargetName[] = ['direct', 'naive', 'subgraph'];

/** `traceEvery`: every n-th request carries the router's ftv1 header, as a router sampling 1 in n requests for field-level traces sends it. */
function locationsJob(traceEvery?: number): Pick<Scenario, 'graphql' | 'direct'> {
  let sent = 0;
  return {
    graphql: (call, tenant) => async () => {
      const traced = traceEvery !== undefined && ++sent % traceEvery === 0;
      const data = await call(tenant.tenantId, LOCATIONS_QUERY, undefined, traced ? { 'apollo-federation-include-trace': 'ftv1' } : undefined);
      const nodes = data?.locations?.nodes ?? [];
      expectCount('locations', nodes.length, 100);
      return digestLocations(nodes);
    },
    direct: (client, tenant) => async () => {
      const page = await client.page<UpstreamLocation>(tenant, LOCATIONS_PATH, 100, null);
      const nodes = page.data.slice(0, 100);
      expectCount('locations', nodes.length, 100);
      return digestLocations(nodes);
    },
  };
}

const locations: Scenario = { name: 'locations', description: `${LOCATIONS_QUERY}, BENCH_CONCURRENCY in flight`, targets: ALL, ...locationsJob() };

const locationsOne: Scenario = {
  name: 'locations-1',
  description: 'the same, 1 in flight (latency)',
  targets: ALL,
  concurrency: 1,
  ...locationsJob(),
};

/** The 9 a.m. case: one company, everyone asking for the same page at once. */
const locationsHot: Scenario = {
  name: 'locations-hot',
  description: 'the same, every worker in one company (one hot query)',
  targets: ALL,
  tenants: 1,
  ...locationsJob(),
};

const traced: Scenario = {
  name: 'locations-ftv1',
  description: 'the same with the router asking for an inline trace (apollo-federation-include-trace: ftv1) on 1 request in 100, as Apollo Router samples by default',
  targets: ['subgraph'],
  baseline: 'locations',
  ...locationsJob(100),
};

const SHIFTS_QUERY = 'query BenchShifts { shifts(first: 100) { nodes { id start end location { id name } } } }';

function shiftsJob(): Pick<Scenario, 'graphql' | 'direct'> {
  return {
    graphql: (call, tenant) => async () => {
      const data = await call(tenant.tenantId, SHIFTS_QUERY);
      const nodes: Array<{ id: string; start: string | null; end: string | null; location: { id: string; name: string } | null }> = data?.shifts?.nodes ?? [];
      expectCount('shifts', nodes.length, 100);
      return JSON.stringify(nodes.map((s) => [s.id, s.start, s.end, s.location?.id ?? null, s.location?.name ?? null]));
    },
    // Sensible by hand: one shifts page, then the locations pages until every location
    // those shifts name has been seen.
    direct: (client, tenant) => async () => {
      const page = await client.page<UpstreamShift>(tenant, SHIFTS_PATH, 100, null);
      const nodes = page.data.slice(0, 100);
      expectCount('shifts', nodes.length, 100);
      const wanted = new Set(nodes.map(locationIdOf).filter((id): id is string => id !== null));
      const found = await client.scan<UpstreamLocation>(tenant, LOCATIONS_PATH, (seen) => [...wanted].every((id) => seen.has(id)));
      return JSON.stringify(
        nodes.map((s) => {
          const location = found.get(locationIdOf(s) ?? '');
          return [String(s.id), s.start ?? null, s.end ?? null, location ? String(location.id) : null, location?.name ?? null];
        }),
      );
    },
  };
}

const shifts: Scenario = { name: 'shifts', description: `${SHIFTS_QUERY}`, targets: GRAPHQL_SERVERS, ...shiftsJob() };

/** Every tenant of the emulator, each worker alternating the locations and the shifts request. */
const tenantsMixed: Scenario = {
  name: 'tenants',
  description: 'every tenant (BENCH_TENANTS), each worker alternating the locations and the shifts request',
  targets: GRAPHQL_SERVERS,
  tenants: 0,
  graphql: (call, tenant) => {
    const jobs = [locationsJob().graphql(call, tenant), shiftsJob().graphql(call, tenant)];
    let turn = 0;
    return () => jobs[turn++ % 2]!();
  },
  direct: (client, tenant) => {
    const jobs = [locationsJob().direct(client, tenant), shiftsJob().direct(client, tenant)];
    let turn = 0;
    return () => jobs[turn++ % 2]!();
  },
};

const ENTITIES_QUERY = 'query BenchEntities($representations: [_Any!]!) { _entities(representations: $representations) { ... on Location { id name } } }';

const entities: Scenario = {
  name: 'entities',
  description: '_entities for 20 Location references (spread over the list)',
  targets: GRAPHQL_SERVERS,
  graphql: (call, tenant) => {
    const representations = spreadLocationIds(tenant).map((id) => ({ __typename: 'Location', id }));
    return async () => {
      const data = await call(tenant.tenantId, ENTITIES_QUERY, { representations });
      const items: Array<{ id: string; name: string } | null> = data?._entities ?? [];
      expectCount('entities', items.filter(Boolean).length, representations.length);
      return digestLocations(items);
    };
  },
  direct: (client, tenant) => {
    const ids = spreadLocationIds(tenant);
    return async () => {
      const found = await client.scan<UpstreamLocation>(tenant, LOCATIONS_PATH, (seen) => ids.every((id) => seen.has(id)));
      const items = ids.map((id) => found.get(id) ?? null);
      expectCount('entities', items.filter(Boolean).length, ids.length);
      return digestLocations(items);
    };
  },
};

const WALK_QUERY = 'query BenchWalk($after: String) { locations(first: 10, after: $after) { nodes { id name } pageInfo { hasNextPage endCursor } } }';

/** One list as a worker pages through it: the GraphQL query and field, the REST path, and a digest of a page's items from either side. */
interface PagedList {
  readonly field: string;
  /** A query with `$after`, returning the field's `nodes` and `pageInfo { hasNextPage endCursor }`. */
  readonly query: string;
  readonly path: string;
  digestNodes(nodes: any[]): string;
  digestItems(items: any[]): string;
}

const locationsList = (query: string): PagedList => ({
  field: 'locations',
  query,
  path: LOCATIONS_PATH,
  digestNodes: digestLocations,
  digestItems: (items: UpstreamLocation[]) => digestLocations(items),
});

const shiftsList = (query: string): PagedList => ({
  field: 'shifts',
  query,
  path: SHIFTS_PATH,
  digestNodes: (nodes: Array<{ id: string; start: string | null; end: string | null }>) => JSON.stringify(nodes.map((s) => [s.id, s.start, s.end])),
  digestItems: (items: UpstreamShift[]) => JSON.stringify(items.map((s) => [String(s.id), s.start ?? null, s.end ?? null])),
});

type PageRead = (list: PagedList, after: string | null) => Promise<{ items: number; next: string | null; digest: string }>;

/**
 * A worker that pages through its company's lists, `pageSize` records a request,
 * following `endCursor` (or, direct, `next`), one list after the other, and starting
 * over at the end (`once`: failing instead, so no page is read twice): the GraphQL job
 * and the direct client's job of the same walk.
 */
function pagingJobs(scenario: string, lists: readonly PagedList[], pageSize: number, once = false): Pick<Scenario, 'graphql' | 'direct'> {
  const walker = (tenant: BenchTenant, read: PageRead): DigestJob => {
    let list = 0;
    let after: string | null = null;
    let done = false;
    return async () => {
      if (done) throw new Error(`${scenario}: every page of company ${tenant.tenantId} has been read once (more requests than pages: add companies)`);
      const current = lists[list]!;
      const page = await read(current, after);
      if (page.items === 0 || page.items > pageSize) throw new Error(`${scenario}: a page of ${page.items} ${current.field}`);
      after = page.next;
      if (after === null) {
        list = (list + 1) % lists.length;
        done = once && list === 0;
      }
      return page.digest;
    };
  };
  return {
    graphql: (call, tenant) =>
      walker(tenant, async (list, after) => {
        const connection = (await call(tenant.tenantId, list.query, { after }))?.[list.field];
        const nodes = connection?.nodes ?? [];
        return { items: nodes.length, next: connection?.pageInfo?.hasNextPage ? connection.pageInfo.endCursor : null, digest: list.digestNodes(nodes) };
      }),
    direct: (client, tenant) =>
      walker(tenant, async (list, ref) => {
        const page = await client.page<any>(tenant, list.path, pageSize, ref);
        return { items: page.data.length, next: page.has_more ? page.next : null, digest: list.digestItems(page.data) };
      }),
  };
}

/**
 * Each worker walks the whole locations list, 10 at a time, again and again. One
 * request is one page; the next page needs the cursor the previous one returned.
 */
const walk: Scenario = {
  name: 'walk',
  description: 'every page of locations(first: 10, after: $endCursor), one page per request',
  targets: GRAPHQL_SERVERS,
  ...pagingJobs('walk', [locationsList(WALK_QUERY)], 10),
};

const PAGES_QUERY = 'query BenchPages($after: String) { locations(first: 100, after: $after) { nodes { id name } pageInfo { hasNextPage endCursor } } }';

/**
 * Nothing to share: each worker has a company of its own and pages through its
 * locations list, 100 at a time, again and again (one request is one page).
 */
const noSharing: Scenario = {
  name: 'no-sharing',
  description: 'a company per worker, each paging through its list: locations(first: 100, after: $endCursor)',
  // `apollo`: what Apollo Server alone costs on this load, the ceiling of any subgraph built on it.
  targets: ['direct', 'floor', 'naive', 'apollo', 'subgraph'],
  tenants: 'per-worker',
  ...pagingJobs('no-sharing', [locationsList(PAGES_QUERY)], 100),
};

/** The cache scenarios' targets: the direct client, and today's build and this checkout's at windows 0 and 5 s. */
const WINDOWS: readonly TargetName[] = ['direct', 'today', 'subgraph', 'today-f5', 'subgraph-f5'];

/**
 * Repeated reads: `companies` companies, each paging through its locations
 * list again and again as no-sharing does; with a window, only the first read of a page
 * within it needs an upstream call.
 */
function repeatedReads(companies: number): Scenario {
  return {
    name: `repeated-${companies}`,
    description: `${companies === 1 ? 'one company' : `${companies} companies`}, each paging through its list again and again: locations(first: 100, after: $endCursor)`,
    // The floor keeping pages 5 s: the least a Node GraphQL server pays for an answer from memory.
    targets: [...WINDOWS, 'floor-f5'],
    companies,
    cache: true,
    ...pagingJobs(`repeated-${companies}`, [locationsList(PAGES_QUERY)], 100),
  };
}

/** Small pages, so 200 companies hold more pages than a run reads: 200 x (40 + 100) = 28,000. */
const SPARSE_PAGE_SIZE = 5;
const SPARSE_LISTS = [
  locationsList(`query BenchSparseLocations($after: String) { locations(first: ${SPARSE_PAGE_SIZE}, after: $after) { nodes { id name } pageInfo { hasNextPage endCursor } } }`),
  shiftsList(`query BenchSparseShifts($after: String) { shifts(first: ${SPARSE_PAGE_SIZE}, after: $after) { nodes { id start end } pageInfo { hasNextPage endCursor } } }`),
];

/**
 * Sparse reads (each page read once per 30 s): 200 companies, each walked
 * through its locations list and then its shifts list, and no page read twice. A run is
 * a few seconds of the 30 s in which every page is read once, so a window saves nothing
 * here and every call above one per request is one added (bench/README.md, "Cache scenarios").
 */
const sparse: Scenario = {
  name: 'sparse',
  description: `200 companies, each page read once: locations, then shifts (first: ${SPARSE_PAGE_SIZE}, after: $endCursor)`,
  targets: WINDOWS,
  companies: 200,
  cache: true,
  ...pagingJobs('sparse', SPARSE_LISTS, SPARSE_PAGE_SIZE, true),
};

export const SCENARIOS: readonly Scenario[] = [
  locations,
  locationsHot,
  locationsOne,
  traced,
  shifts,
  tenantsMixed,
  entities,
  walk,
  noSharing,
  repeatedReads(1),
  repeatedReads(20),
  repeatedReads(200),
  sparse,
];

/** The request a cold start waits for: the locations list, correct. */
export const COLD_START_QUERY = LOCATIONS_QUERY;
