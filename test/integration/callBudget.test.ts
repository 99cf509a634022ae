import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { DEFAULT_UPSTREAM_CALL_BUDGET, EMPTY_PAGES_TOLERATED } from '../../src/upstream/resilience/callBudget';
import { LIST_PATHS, startForeignUpstream, type FaultContext, type ForeignUpstream } from '../helpers/foreignUpstream';
import { foreignUpstreamEnv, postGraphQL } from '../helpers/subgraph';

/**
 * One GraphQL request is bounded in what it costs the upstream (docs/limits.md,
 * "Upstream faults and limits"): an
 * upstream that answers empty pages with `has_more: true` forever, or unique pages
 * forever, is walked only as far as the request's call budget (default 200) or, for
 * empty pages, a few pages. Every kind of walk is tried: `first`, `last` (walks to the
 * end), `location(id:)` and `_entities` (both scan for an unknown id). One tenant per
 * case, so no index or cache carries over between cases.
 */

type Chain = 'empty' | 'unique';
type Walk = 'first' | 'last' | 'location' | 'entities';
const WALKS: Walk[] = ['first', 'last', 'location', 'entities'];

/** A page chain that never ends: the page number travels in `next`. */
const endless = (chain: Chain) => (ctx: FaultContext) => {
  const page = Number(ctx.url.searchParams.get('page') ?? '1');
  const size = ctx.url.searchParams.get('page_size') ?? '100';
  const data = chain === 'empty' ? [] : [{ object: 'location', id: `loc_${page}`, name: `Site ${page}` }];
  const body = { object: 'list', data, has_more: true, next: `${LIST_PATHS.locations}?page=${page + 1}&page_size=${size}`, previous: null };
  ctx.res.writeHead(200, { 'content-type': 'application/json' });
  ctx.res.end(JSON.stringify(body));
  return true;
};

const QUERIES: Record<Walk, { query: string; variables?: Record<string, unknown> }> = {
  first: { query: '{ locations(first: 10) { nodes { id } } }' },
  last: { query: '{ locations(last: 5) { nodes { id } } }' },
  location: { query: '{ location(id: "loc_unknown") { id } }' },
  entities: {
    query: 'query($r: [_Any!]!) { _entities(representations: $r) { ... on Location { id name } } }',
    variables: { r: [{ __typename: 'Location', id: 'loc_unknown' }] },
  },
};

let up: ForeignUpstream;
let server: RunningServer;

beforeAll(async () => {
  up = await startForeignUpstream();
  for (const chain of ['empty', 'unique'] as const) for (const walk of WALKS) up.add({ name: `${chain}-${walk}`, fault: endless(chain) });
  const config = loadConfig(
    foreignUpstreamEnv(up, {
      WFS_CURSOR_SECRET: 'call-budget-cursor-secret-0123456789abcdef',
      LOG_LEVEL: 'silent',
    }),
  );
  expect(config.upstreamCallBudget).toBe(DEFAULT_UPSTREAM_CALL_BUDGET);
  server = await startServer(config, { logger: createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() })) });
});

afterAll(async () => {
  await up?.close();
  await server?.close();
});

const gql = (name: string, walk: Walk) => postGraphQL(server.url, QUERIES[walk], { 'x-tenant-id': up.tenant(name).tenantId });

const calls = (name: string) => up.tenant(name).calls.filter((call) => call.list === 'locations').length;

describe.each(WALKS)('%s against an endless chain', (walk) => {
  it(`stops a chain of empty pages claiming has_more after ${EMPTY_PAGES_TOLERATED} calls with UPSTREAM_BAD_RESPONSE`, async () => {
    const response = await gql(`empty-${walk}`, walk);
    expect(response.errors?.map((e) => e.extensions?.code)).toEqual(['UPSTREAM_BAD_RESPONSE']);
    expect(response.errors![0]!.message).toContain(`${EMPTY_PAGES_TOLERATED} empty locations pages in a row`);
    expect(calls(`empty-${walk}`)).toBe(EMPTY_PAGES_TOLERATED);
  });

  it('walks unique pages forever only as far as the call budget, then says the budget was reached', async () => {
    const response = await gql(`unique-${walk}`, walk);
    if (walk === 'first') {
      // `first: 10` needs ten one-record pages: served, and bounded by what it asked for.
      expect(response.errors).toBeUndefined();
      expect(response.data.locations.nodes).toHaveLength(10);
      expect(calls('unique-first')).toBe(10);
      return;
    }
    expect(response.errors?.map((e) => e.extensions?.code)).toEqual(['UPSTREAM_BAD_RESPONSE']);
    expect(response.errors![0]!.message).toContain(`call budget of this request was reached (${DEFAULT_UPSTREAM_CALL_BUDGET} upstream calls)`);
    expect(calls(`unique-${walk}`)).toBe(DEFAULT_UPSTREAM_CALL_BUDGET);
  });
});

describe('WFS_UPSTREAM_CALL_BUDGET', () => {
  const base = {}; // demo mode: the variable is read the same way in every mode
  it('defaults to 200 and takes a positive integer', () => {
    expect(loadConfig({}).upstreamCallBudget).toBe(200);
    expect(loadConfig({ ...base, WFS_UPSTREAM_CALL_BUDGET: '50' }).upstreamCallBudget).toBe(50);
  });

  it.each(['0', '-3', 'many', '1.5'])('refuses %p, naming the variable', (value) => {
    expect(() => loadConfig({ ...base, WFS_UPSTREAM_CALL_BUDGET: value })).toThrow(/^WFS_UPSTREAM_CALL_BUDGET: /);
  });
});
