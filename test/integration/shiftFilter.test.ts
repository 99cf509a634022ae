import type { EmulatorTenant, PageReferenceFormat } from '../../tools/emulator';
import { FILTER_SCAN_PAGES } from '../../src/graphql/data/connections';
import { as, testTenant } from '../helpers/fixtures';
import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * `shifts(filter:)` and `Location.shifts(startsFrom, startsBefore)` (docs/upstream.md,
 * "How REST maps onto GraphQL") over several hundred shifts: exactly the matching shifts in upstream
 * order, every edge cursor resumes, a scan stops at its page bound with a cursor
 * that goes on, and the per-tenant index serves pages it holds without a call.
 */
const A = testTenant('a', { locations: 4, shifts: 600 });
// 23 pages of 100 shifts: more than one filtered request may scan.
const LONG = testTenant('d', { locations: 2, shifts: 2_300 });

const WEEK = { startsFrom: '2026-11-30T00:00:00+01:00', startsBefore: '2026-12-07T00:00:00+01:00' };
const LOCATION = A.locations[1]!.id;

function expected(tenant: EmulatorTenant, filter: { locationId?: string; startsFrom?: string; startsBefore?: string }): string[] {
  const from = filter.startsFrom ? Date.parse(filter.startsFrom) : -Infinity;
  const before = filter.startsBefore ? Date.parse(filter.startsBefore) : Infinity;
  return tenant.shifts
    .filter((s) => (filter.locationId === undefined || s.location === filter.locationId) && Date.parse(s.start) >= from && Date.parse(s.start) < before)
    .map((s) => s.id);
}

const ROOT = `query ($first: Int, $after: String, $last: Int, $before: String, $filter: ShiftFilter) {
  shifts(first: $first, after: $after, last: $last, before: $before, filter: $filter) {
    edges { cursor node { id start location { id } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;
const CHILD = `query ($id: ID!, $first: Int, $after: String, $startsFrom: DateTime, $startsBefore: DateTime) {
  location(id: $id) {
    shifts(first: $first, after: $after, startsFrom: $startsFrom, startsBefore: $startsBefore) {
      edges { cursor node { id } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`;

type Page = { edges: Array<{ cursor: string; node: { id: string } }>; pageInfo: { hasNextPage: boolean; endCursor: string | null } };

async function walk(tenant: EmulatorTenant, fetch: (after: string | null) => Promise<Page>): Promise<Array<{ id: string; cursor: string }>> {
  const seen: Array<{ id: string; cursor: string }> = [];
  let after: string | null = null;
  for (let requests = 0; requests < 200; requests += 1) {
    const page: Page = await fetch(after);
    seen.push(...page.edges.map((e) => ({ id: e.node.id, cursor: e.cursor })));
    if (!page.pageInfo.hasNextPage) return seen;
    after = page.pageInfo.endCursor;
  }
  throw new Error(`walk of ${tenant.tenantId} did not end`);
}

let subgraph: TestSubgraph;
beforeEach(async () => {
  subgraph = await startTestSubgraph({ tenants: [A, LONG] });
});
afterEach(() => subgraph.close());

const root = async (variables: Record<string, unknown>, tenant: EmulatorTenant = A): Promise<Page> => {
  const response = await subgraph.query(ROOT, variables, as(tenant));
  expect(response.errors).toBeUndefined();
  return response.data!.shifts as Page;
};

describe('shifts(filter:)', () => {
  it.each<PageReferenceFormat>(['absolute', 'relative', 'token'])(
    'a week at one location over 600 shifts (%s references): exactly the matches in upstream order, resumable from every edge',
    async (format) => {
      subgraph.emulator.configure({ pageReferenceFormat: format });
      const filter = { locationId: LOCATION, ...WEEK };
      const want = expected(A, filter);
      expect(want.length).toBeGreaterThan(10);
      const seen = await walk(A, (after) => root({ first: 4, after, filter }));
      expect(seen.map((e) => e.id)).toEqual(want);
      for (const [index, edge] of seen.entries()) {
        const page = await root({ first: 3, after: edge.cursor, filter });
        expect(page.edges.map((e) => e.node.id)).toEqual(want.slice(index + 1, index + 4));
        const back = await root({ last: 2, before: edge.cursor, filter });
        expect(back.edges.map((e) => e.node.id)).toEqual(want.slice(Math.max(0, index - 2), index));
      }
    },
  );

  it('Location.shifts(startsFrom, startsBefore) returns the same shifts, with startsFrom inclusive and startsBefore exclusive, compared as instants', async () => {
    const first = A.shifts.find((s) => s.location === LOCATION && Date.parse(s.start) >= Date.parse(WEEK.startsFrom))!;
    // The same instant written in UTC: inclusive at the start, exclusive at the end.
    const startsFrom = new Date(Date.parse(first.start)).toISOString();
    const startsBefore = new Date(Date.parse(WEEK.startsBefore)).toISOString();
    const want = expected(A, { locationId: LOCATION, startsFrom, startsBefore });
    expect(want[0]).toBe(first.id);
    const seen = await walk(A, async (after) => {
      const response = await subgraph.query(CHILD, { id: LOCATION, first: 5, after, startsFrom, startsBefore }, as(A));
      expect(response.errors).toBeUndefined();
      return response.data!.location.shifts as Page;
    });
    expect(seen.map((e) => e.id)).toEqual(want);
    const exclusive = await subgraph.query(CHILD, { id: LOCATION, first: 100, startsFrom: WEEK.startsFrom, startsBefore: first.start }, as(A));
    expect(exclusive.data!.location.shifts.edges.map((e: { node: { id: string } }) => e.node.id)).not.toContain(first.id);
  });

  it('stops at the scan bound with the edges found so far, hasNextPage true and an endCursor that goes on', async () => {
    const last = LONG.shifts.at(-1)!;
    const filter = { startsFrom: last.start };
    const want = expected(LONG, filter);
    const first = await root({ first: 10, filter }, LONG);
    expect(first.edges).toEqual([]);
    expect(first.pageInfo.hasNextPage).toBe(true);
    expect(first.pageInfo.endCursor).toEqual(expect.any(String));
    expect(subgraph.emulator.counters.listRequests.shifts).toBe(FILTER_SCAN_PAGES);
    const rest = await root({ first: 10, after: first.pageInfo.endCursor, filter }, LONG);
    expect(rest.edges.map((e) => e.node.id)).toEqual(want);
    expect(rest.pageInfo.hasNextPage).toBe(false);
    expect(subgraph.emulator.counters.listRequests.shifts).toBe(Math.ceil(LONG.shifts.length / 100));
  });

  it('costs no upstream call when the per-tenant index holds the pages', async () => {
    await walk(A, (after) => root({ first: 50, after, filter: { locationId: LOCATION } }));
    const pages = Math.ceil(A.shifts.length / 100);
    expect(subgraph.emulator.counters.listRequests.shifts).toBe(pages);
    subgraph.emulator.resetCounters();
    const other = A.locations[2]!.id;
    const seen = await walk(A, (after) => root({ first: 50, after, filter: { locationId: other, ...WEEK } }));
    expect(seen.map((e) => e.id)).toEqual(expected(A, { locationId: other, ...WEEK }));
    expect(subgraph.emulator.counters.listRequests.shifts).toBe(0);
  });

  it('refuses a cursor under another filter, another parent or no filter: BAD_USER_INPUT with no upstream call', async () => {
    const page = await root({ first: 2, filter: { locationId: LOCATION, ...WEEK } });
    const cursor = page.pageInfo.endCursor;
    subgraph.emulator.resetCounters();
    const attempts = [
      subgraph.query(ROOT, { first: 2, after: cursor, filter: { locationId: LOCATION } }, as(A)),
      subgraph.query(ROOT, { first: 2, after: cursor, filter: { locationId: A.locations[0]!.id, ...WEEK } }, as(A)),
      subgraph.query(ROOT, { first: 2, after: cursor }, as(A)),
      subgraph.query(CHILD, { id: LOCATION, first: 2, after: cursor, ...WEEK }, as(A)),
    ];
    for (const response of await Promise.all(attempts)) expect(errorCodes(response)).toEqual(['BAD_USER_INPUT']);
    expect(subgraph.emulator.counters.listRequests.shifts).toBe(0);
  });

  it.each(['2026-02-30T09:00:00Z', '2026-11-30T24:00:00Z', '2026-11-30T09:00:00', 'next monday'])('refuses the impossible or offset-less date-time %p as BAD_USER_INPUT', async (startsFrom) => {
    const response = await subgraph.query(ROOT, { first: 2, filter: { startsFrom } }, as(A));
    expect(errorCodes(response)).toEqual(['BAD_USER_INPUT']);
    expect(subgraph.emulator.counters.listRequests.shifts).toBe(0);
  });
});
