import { request } from 'undici';
import type { EmulatorTenant, PageReferenceFormat } from '../../src/emulator';
import { as, testTenant } from '../helpers/fixtures';
import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { timesheetExtension, timesheets, withTimesheets } from '../helpers/timesheets';

/**
 * The proof of the registry (issue 8): a resource the product does not ship, added in
 * test code alone (descriptor, schema block, relation resolver, seed data), is served
 * like the registry's own: paged both ways, batched as an entity, related to Location,
 * its scope enforced and its child connection's cursors bound to their parent.
 */
const A = withTimesheets(testTenant('a', { locations: 12, shifts: 90, scopes: ['shifts.read', 'timesheets.read'] }), 75);
const B = withTimesheets(testTenant('b', { locations: 3, shifts: 10, scopes: ['shifts.read'] }), 10);
const SHEETS = A.timesheets as Array<{ id: string; location: { id: string }; shift: string }>;

const PAGE = `query ($first: Int, $after: String, $last: Int, $before: String) {
  timesheets(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { id minutes } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

// A subgraph per test: each starts with empty per-tenant indexes and counters, so it passes alone and in any order.
let subgraph: TestSubgraph;
beforeEach(async () => {
  subgraph = await startTestSubgraph({ tenants: [A, B], resources: [timesheets] }, {}, { extension: timesheetExtension });
});
afterEach(() => subgraph.close());

const calls = () => subgraph.emulator.counters.listRequests;

describe('a resource added in test code: timesheets', () => {
  it.each<PageReferenceFormat>(['absolute', 'relative', 'token'])('pages forward and backward with %s page references', async (format) => {
    subgraph.emulator.configure({ pageReferenceFormat: format });
    const forward: string[] = [];
    let after: string | null = null;
    do {
      const page: any = await subgraph.query(PAGE, { first: 8, after }, as(A));
      expect(page.errors).toBeUndefined();
      forward.push(...page.data.timesheets.edges.map((e: { node: { id: string } }) => e.node.id));
      after = page.data.timesheets.pageInfo.hasNextPage ? page.data.timesheets.pageInfo.endCursor : null;
    } while (after);
    expect(forward).toEqual(SHEETS.map((s) => s.id));

    const tail: any = await subgraph.query(PAGE, { last: 8 }, as(A));
    const backward: string[] = tail.data.timesheets.edges.map((e: { node: { id: string } }) => e.node.id);
    let before: string | null = tail.data.timesheets.pageInfo.startCursor;
    while (before) {
      const page: any = await subgraph.query(PAGE, { last: 8, before }, as(A));
      expect(page.errors).toBeUndefined();
      backward.unshift(...page.data.timesheets.edges.map((e: { node: { id: string } }) => e.node.id));
      before = page.data.timesheets.pageInfo.hasPreviousPage ? page.data.timesheets.pageInfo.startCursor : null;
    }
    expect(backward).toEqual(SHEETS.map((s) => s.id));
  });

  it('resolves _entities for it in one batch, null in place for an unknown id', async () => {
    const wanted = [SHEETS[70]!.id, 'ts_unknown', SHEETS[3]!.id, SHEETS[40]!.id];
    const response = await subgraph.query(
      'query ($r: [_Any!]!) { _entities(representations: $r) { ... on Timesheet { id minutes } } }',
      { r: wanted.map((id) => ({ __typename: 'Timesheet', id })) },
      as(A),
    );
    expect(response.errors).toBeUndefined();
    expect(response.data!._entities.map((e: { id: string } | null) => e?.id ?? null)).toEqual([wanted[0], null, wanted[2], wanted[3]]);
    // 75 timesheets fit one page of 100: one scan for the whole batch.
    expect(calls().timesheets).toBe(1);
  });

  it('resolves its relation to Location in one batch', async () => {
    const response = await subgraph.query('{ timesheets(first: 75) { nodes { id location { id name } shift { id } } } }', {}, as(A));
    expect(response.errors).toBeUndefined();
    const nodes = response.data!.timesheets.nodes as Array<{ location: { id: string; name: string }; shift: { id: string } }>;
    expect(nodes.map((n) => n.location.id)).toEqual(SHEETS.map((s) => s.location.id));
    expect(nodes.map((n) => n.shift.id)).toEqual(SHEETS.map((s) => s.shift));
    expect(nodes.every((n) => n.location.name === A.locations.find((l) => l.id === n.location.id)!.name)).toBe(true);
    expect(calls()).toMatchObject({ timesheets: 1, locations: 1, shifts: 1 });
  });

  it('enforces its scope: FORBIDDEN without timesheets.read, and no timesheets call', async () => {
    const response = await subgraph.query('{ timesheets(first: 5) { nodes { id } } locations(first: 2) { nodes { id } } }', {}, as(B));
    expect(errorCodes(response)).toEqual(['FORBIDDEN']);
    expect(response.data).toEqual({ timesheets: null, locations: { nodes: B.locations.slice(0, 2).map((l) => ({ id: l.id })) } });
    expect(calls().timesheets).toBe(0);
  });

  it('binds a child connection cursor to its parent: refused under another location, with no upstream call', async () => {
    const [first, second] = A.locations;
    const query = 'query ($id: ID!, $after: String) { location(id: $id) { timesheets(first: 2, after: $after) { nodes { id } pageInfo { endCursor hasNextPage } } } }';
    const page: any = await subgraph.query(query, { id: first!.id }, as(A));
    expect(page.data.location.timesheets.nodes.map((n: { id: string }) => n.id)).toEqual(SHEETS.filter((s) => s.location.id === first!.id).slice(0, 2).map((s) => s.id));
    const cursor = page.data.location.timesheets.pageInfo.endCursor;
    const next: any = await subgraph.query(query, { id: first!.id, after: cursor }, as(A));
    expect(next.data.location.timesheets.nodes.map((n: { id: string }) => n.id)).toEqual(SHEETS.filter((s) => s.location.id === first!.id).slice(2, 4).map((s) => s.id));

    // The location itself is already in the per-tenant index; only the cursor is at stake.
    subgraph.emulator.resetCounters();
    const refused = await subgraph.query(query, { id: second!.id, after: cursor }, as(A));
    expect(errorCodes(refused)).toEqual(['BAD_USER_INPUT']);
    expect(calls()).toMatchObject({ timesheets: 0 });
    const plain = await subgraph.query(PAGE, { first: 2, after: cursor }, as(A));
    expect(errorCodes(plain)).toEqual(['BAD_USER_INPUT']);
    expect(calls()).toMatchObject({ timesheets: 0, locations: 0 });
  });

  it('is served by the emulator from seed data alone, with the scope the descriptor names', async () => {
    const token = async (tenant: EmulatorTenant) => {
      const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: tenant.clientId, client_secret: tenant.clientSecret });
      const response = await request(subgraph.emulator.tokenUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
      return ((await response.body.json()) as { access_token: string }).access_token;
    };
    const list = async (tenant: EmulatorTenant) =>
      request(`${subgraph.emulator.shardUrls[tenant.shard]}${timesheets.path}?page_size=100`, { headers: { authorization: `Bearer ${await token(tenant)}` } });
    const granted = await list(A);
    expect(granted.statusCode).toBe(200);
    expect(((await granted.body.json()) as { data: Array<{ id: string }> }).data.map((t) => t.id)).toEqual(SHEETS.map((t) => t.id));
    const refused = await list(B);
    await refused.body.dump();
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['www-authenticate']).toContain('scope="timesheets.read"');
  });
});
