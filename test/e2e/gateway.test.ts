import { composeServices } from '@apollo/composition';
import { ApolloGateway, RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'graphql';
import { parse as parseYaml } from 'yaml';
import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';
import { makeTenant, type EmulatorTenant } from '../../tools/emulator';
import { startTestIdentityProvider, type TestIdentityProvider } from '../helpers/jwks';
import { listsCalled, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { as, gatewayTenants } from '../helpers/fixtures';

/**
 * The supergraph end to end: our real subgraph (on the upstream emulator) and the
 * example people subgraph behind @apollo/gateway, with the header rules of
 * router/router.yaml applied to every subgraph request. Apollo Router is a binary we
 * cannot run here; the gateway executes the same supergraph with the same query
 * planner semantics, and the header rules are read from the router's own file.
 */

const repoRoot = path.resolve(__dirname, '../..');
const ROUTER_SECRET = 'router-secret-for-the-gateway-test-0123456789';

const { withShifts: WITH_SHIFTS, other: OTHER, noShifts: NO_SHIFTS } = gatewayTenants();
// Queried by one test only, so its entity indexes start cold in each subgraph instance.
const LARGE = makeTenant({ tenantId: '12121212-0000-4000-8000-000000000007', clientId: 'client-l', clientSecret: 'secret-l-6b1f9e3a', grantedScopes: ['shifts.read'], shard: 1, locationCount: 8, shiftCount: 70 });
const tenants: EmulatorTenant[] = [WITH_SHIFTS, OTHER, NO_SHIFTS, LARGE];

type Rule = { propagate?: { named: string }; insert?: { name: string; value: string } };

/** The `headers` section of router/router.yaml: the only rule kinds it uses are `propagate: named` and `insert`. */
const headerRules = (
  parseYaml(readFileSync(path.join(repoRoot, 'router', 'router.yaml'), 'utf8')) as {
    headers: { all: { request: Rule[] }; subgraphs: Record<string, { request: Rule[] }> };
  }
).headers;

/** The router's `${env.NAME}` and `${env.NAME:-default}` expansion, over the environment the test gives the router. */
function expand(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{env\.([A-Z0-9_]+)(?::-([^}]*))?\}/g, (_match, name: string, fallback: string | undefined) => {
    const expanded = env[name] ?? fallback;
    if (expanded === undefined) throw new Error(`router.yaml needs ${name} in the environment`);
    return expanded;
  });
}

interface GatewayContext {
  headers: Record<string, string>;
}

/** One request the gateway sent to a subgraph, as it left the gateway. */
interface SubgraphFetch {
  subgraph: string;
  headers: Record<string, string>;
  /** The number of `_entities` representations; undefined for a root-field fetch. */
  representations: number | undefined;
}

/** A subgraph data source that applies router.yaml's header rules for its subgraph. */
class RouterHeaderRules extends RemoteGraphQLDataSource<GatewayContext> {
  constructor(
    private readonly subgraphName: string,
    url: string,
    private readonly routerEnv: Record<string, string>,
    private readonly fetches: SubgraphFetch[] | undefined,
  ) {
    super({ url });
  }

  override willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<GatewayContext>): void {
    const rules = [...headerRules.all.request, ...(headerRules.subgraphs[this.subgraphName]?.request ?? [])];
    const incoming = 'headers' in context ? (context as GatewayContext).headers : {};
    for (const rule of rules) {
      if (rule.propagate) {
        const named = expand(rule.propagate.named, this.routerEnv);
        const value = incoming[named.toLowerCase()];
        if (value !== undefined) request.http?.headers.set(named, value);
      }
      if (rule.insert) request.http?.headers.set(rule.insert.name, expand(rule.insert.value, this.routerEnv));
    }
    if (this.fetches) {
      const representations = request.variables?.['representations'];
      this.fetches.push({
        subgraph: this.subgraphName,
        headers: Object.fromEntries(request.http?.headers ?? []),
        representations: Array.isArray(representations) ? representations.length : undefined,
      });
    }
  }
}

const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

async function startGateway(
  urls: Record<string, string>,
  routerEnv: Record<string, string>,
  fetches?: SubgraphFetch[],
  plugins: ApolloServerPlugin<GatewayContext>[] = [],
): Promise<ApolloServer<GatewayContext>> {
  const schemaFiles: Record<string, string> = { wfs: 'schema.graphql', people: 'examples/people-subgraph/schema.graphql' };
  const composed = composeServices(
    Object.entries(schemaFiles).map(([name, file]) => ({
      name,
      url: urls[name] as string,
      typeDefs: parse(readFileSync(path.join(repoRoot, file), 'utf8')),
    })),
  );
  if (!composed.supergraphSdl) throw new Error(`composition failed: ${composed.errors?.map((error) => error.message).join('; ')}`);
  const gateway = new ApolloGateway({
    supergraphSdl: composed.supergraphSdl,
    logger: silent,
    buildService: ({ name, url }) => new RouterHeaderRules(name, url as string, routerEnv, fetches),
  });
  const server = new ApolloServer<GatewayContext>({ gateway, logger: silent, plugins });
  await server.start();
  return server;
}

async function run(server: ApolloServer<GatewayContext>, query: string, headers: Record<string, string>) {
  const response = await server.executeOperation({ query }, { contextValue: { headers } });
  if (response.body.kind !== 'single') throw new Error('expected a single result');
  return response.body.singleResult as { data?: Record<string, any> | null; errors?: { message: string; path?: unknown[]; extensions?: { code?: string; serviceName?: string } }[] };
}


const ids = (nodes: { id: string }[] | undefined) => nodes?.map((node) => node.id);

interface TraceNodeLike {
  responseName?: string | null;
  child?: TraceNodeLike[] | null;
  error?: { message?: string | null }[] | null;
}

/** The fetch nodes of a gateway's query plan trace: each subgraph call, with the trace it decoded. */
function fetchTraceNodes(plan: unknown, found: { serviceName: string; traceParsingFailed?: boolean; trace?: { root?: TraceNodeLike } }[] = []) {
  if (plan && typeof plan === 'object') {
    if ('serviceName' in plan) found.push(plan as (typeof found)[number]);
    else for (const value of Object.values(plan)) fetchTraceNodes(value, found);
  }
  return found;
}

/**
 * 50 shifts with their location names (ours) and, from the people subgraph through
 * `_entities`, the shift notes, location headcounts and managers and the users'
 * names: the gateway fans that out into one fetch to us and a few batched fetches to
 * the people subgraph. Behind it, our subgraph must make a handful of upstream list
 * calls, not one per shift or per location. LARGE must not have been queried before
 * on this subgraph instance, so its entity index starts cold.
 */
async function expectJoinedShiftsBatched(
  gateway: ApolloServer<GatewayContext>,
  headers: Record<string, string>,
  subgraph: TestSubgraph,
  fetches: SubgraphFetch[],
): Promise<void> {
  subgraph.emulator.resetCounters();
  fetches.length = 0;
  const result = await run(
    gateway,
    `{
      shifts(first: 50) {
        nodes { id start location { id name headcount manager { name } } user { id name role } notes }
        pageInfo { hasNextPage }
      }
    }`,
    headers,
  );
  expect(result.errors).toBeUndefined();
  const shifts = result.data?.['shifts'];
  expect(ids(shifts.nodes)).toEqual(LARGE.shifts.slice(0, 50).map((shift) => shift.id));
  expect(shifts.pageInfo.hasNextPage).toBe(true);
  const locationNames = new Map(LARGE.locations.map((location) => [location.id, location.name]));
  (shifts.nodes as any[]).forEach((node, index) => {
    const upstream = LARGE.shifts[index]!;
    expect(node.location).toEqual({ id: upstream.location, name: locationNames.get(upstream.location), headcount: expect.any(Number), manager: { name: expect.any(String) } });
    expect(node.user).toEqual(upstream.user === null ? null : { id: upstream.user, name: expect.any(String), role: expect.any(String) });
  });
  expect((shifts.nodes as any[]).filter((node) => node.user !== null).length).toBeGreaterThan(40);

  // The gateway's side: one fetch to us, the people fields in a few `_entities` batches.
  const toUs = fetches.filter((fetch) => fetch.subgraph === 'wfs');
  const toPeople = fetches.filter((fetch) => fetch.subgraph === 'people');
  expect(toUs).toHaveLength(1);
  expect(toPeople.length).toBeGreaterThanOrEqual(1);
  expect(toPeople.length).toBeLessThanOrEqual(3);
  for (const fetch of toPeople) expect(fetch.representations).toBeGreaterThan(1);

  // Upstream: the shifts page and one scan of the locations list for the names.
  const calls = subgraph.emulator.counters.listRequestsByTenant[LARGE.tenantId];
  expect(calls?.shifts).toBeGreaterThanOrEqual(1);
  expect(calls?.locations).toBeGreaterThanOrEqual(1);
  expect(calls!.shifts + calls!.locations).toBeLessThanOrEqual(3);
  expect(subgraph.emulator.counters.listRequests).toEqual(calls);
}

describe('supergraph through a gateway', () => {
  let subgraph: TestSubgraph;
  let people: RunningPeopleSubgraph;
  let gateway: ApolloServer<GatewayContext>;
  const fetches: SubgraphFetch[] = [];

  beforeAll(async () => {
    people = await startPeopleSubgraph();
    subgraph = await startTestSubgraph({ tenants }, { WFS_ROUTER_SECRET: ROUTER_SECRET });
    gateway = await startGateway({ wfs: subgraph.server.url, people: people.url }, { WFS_ROUTER_SECRET: ROUTER_SECRET }, fetches);
  });

  afterAll(async () => {
    await gateway?.stop();
    await subgraph?.close();
    await people?.close();
  });

  it('joins our locations and shifts with the people subgraph fields in one request', async () => {
    const result = await run(
      gateway,
      `{
        locations(first: 3) { nodes { id name headcount manager { name } } }
        shifts(first: 5) {
          nodes { id start end location { name headcount } user { id name role } notes }
          pageInfo { hasNextPage endCursor }
        }
      }`,
      as(WITH_SHIFTS),
    );
    expect(result.errors).toBeUndefined();
    const direct = await subgraph.query('{ locations(first: 3) { nodes { id name } } }', {}, { ...as(WITH_SHIFTS), 'router-authorization': ROUTER_SECRET });
    const locations = result.data?.['locations'].nodes as any[];
    expect(locations.map(({ id, name }) => ({ id, name }))).toEqual(direct.data?.locations.nodes);
    for (const location of locations) {
      expect(location.headcount).toEqual(expect.any(Number));
      expect(location.manager.name).toEqual(expect.any(String));
    }
    const shifts = result.data?.['shifts'];
    expect(shifts.nodes).toHaveLength(5);
    expect(shifts.pageInfo.hasNextPage).toBe(true);
    for (const shift of shifts.nodes) {
      if (shift.location) expect(shift.location.headcount).toEqual(expect.any(Number));
      if (shift.user) expect(shift.user).toEqual({ id: expect.any(String), name: expect.any(String), role: expect.any(String) });
    }
  });

  it('pages with the shared PageInfo, whichever subgraph resolves it', async () => {
    const first = await run(gateway, '{ shifts(first: 4) { nodes { id } pageInfo { endCursor } } people(first: 2) { pageInfo { hasNextPage endCursor } } }', as(WITH_SHIFTS));
    expect(first.errors).toBeUndefined();
    expect(first.data?.['people'].pageInfo.hasNextPage).toBe(true);
    const cursor = first.data?.['shifts'].pageInfo.endCursor as string;
    const next = await run(gateway, `{ shifts(first: 4, after: ${JSON.stringify(cursor)}) { nodes { id } } }`, as(WITH_SHIFTS));
    expect(next.errors).toBeUndefined();
    const seen = new Set((first.data?.['shifts'].nodes as { id: string }[]).map((shift) => shift.id));
    expect((next.data?.['shifts'].nodes as { id: string }[]).some((shift) => seen.has(shift.id))).toBe(false);
  });

  it('carries the tenant header through to our subgraph', async () => {
    const query = '{ locations(first: 100) { nodes { id } } }';
    const one = await run(gateway, query, as(WITH_SHIFTS));
    const other = await run(gateway, query, as(OTHER));
    expect(ids(one.data?.['locations'].nodes)).toEqual(WITH_SHIFTS.locations.map((location) => location.id));
    expect(ids(other.data?.['locations'].nodes)).toEqual(OTHER.locations.map((location) => location.id));
  });

  it('batches the entity joins: 50 shifts with location and user names cost at most 3 upstream list calls', async () => {
    await expectJoinedShiftsBatched(gateway, as(LARGE), subgraph, fetches);
  });

  it('keeps a failing field to itself: FORBIDDEN shifts beside served locations and people', async () => {
    const result = await run(gateway, '{ locations(first: 2) { nodes { name headcount } } shifts(first: 2) { nodes { id } } people(first: 1) { nodes { name } } }', as(NO_SHIFTS));
    expect(result.data?.['locations'].nodes).toHaveLength(2);
    expect(result.data?.['people'].nodes).toHaveLength(1);
    expect(result.data?.['shifts']).toBeNull();
    expect(result.errors?.map((error) => error.extensions?.code)).toEqual(['FORBIDDEN']);
  });

  /**
   * The people subgraph stopped: the fields it adds to our entities are nullable, so
   * the gateway nulls just those, with an error at their path, and serves our lists.
   */
  it('decodes our federated trace (ftv1) when it captures traces, as a router does for the requests it samples', async () => {
    const plans: unknown[] = [];
    const tracing = await startGateway({ wfs: subgraph.server.url, people: people.url }, { WFS_ROUTER_SECRET: ROUTER_SECRET }, undefined, [
      {
        async requestDidStart({ metrics }) {
          // What usage reporting does for a sampled request: the gateway then sends `apollo-federation-include-trace: ftv1`.
          metrics.captureTraces = true;
          return {
            async willSendResponse(context) {
              plans.push(context.metrics.queryPlanTrace);
            },
          };
        },
      },
    ]);
    try {
      const result = await run(tracing, '{ locations(first: 2) { nodes { name headcount } } shifts(first: 2) { nodes { id } } }', as(NO_SHIFTS));
      expect(result.data?.['locations'].nodes).toHaveLength(2);
      const fetches = fetchTraceNodes(plans[0]);
      const ours = fetches.find((fetch) => fetch.serviceName === 'wfs');
      expect(ours?.traceParsingFailed).toBe(false);
      const root = ours?.trace?.root;
      expect(root?.child?.map((child) => child.responseName)).toEqual(['locations', 'shifts']);
      const nodes = root?.child?.[0]?.child?.find((child) => child.responseName === 'nodes');
      expect(nodes?.child).toHaveLength(2);
      expect(root?.child?.[1]?.error?.[0]?.message).toBe('<masked>');
    } finally {
      await tracing.stop();
    }
  });

  it('serves our data when the people subgraph is down, with errors only for its fields', async () => {
    const doomed = await startPeopleSubgraph();
    const partial = await startGateway({ wfs: subgraph.server.url, people: doomed.url }, { WFS_ROUTER_SECRET: ROUTER_SECRET });
    try {
      await doomed.close();
      const result = await run(partial, '{ locations(first: 3) { nodes { id name headcount } } shifts(first: 2) { nodes { id notes } } }', as(WITH_SHIFTS));
      expect(result.data?.['locations'].nodes).toEqual(WITH_SHIFTS.locations.slice(0, 3).map((location) => ({ id: location.id, name: location.name, headcount: null })));
      expect(ids(result.data?.['shifts'].nodes)).toEqual(WITH_SHIFTS.shifts.slice(0, 2).map((shift) => shift.id));
      expect(result.errors?.length).toBeGreaterThanOrEqual(1);
      for (const error of result.errors ?? []) {
        const where = (error.path ?? []).filter((segment): segment is string => typeof segment === 'string');
        // Errors name the people fields, or carry no path; none is about our lists.
        expect(where.length === 0 || ['headcount', 'notes'].includes(where[where.length - 1]!)).toBe(true);
        expect(error.extensions?.serviceName ?? 'people').toBe('people');
      }
    } finally {
      await partial.stop();
    }
  });

  it('is refused by our subgraph when the router does not send the router secret', async () => {
    const wrongSecret = await startGateway({ wfs: subgraph.server.url, people: people.url }, { WFS_ROUTER_SECRET: 'not-the-secret' });
    try {
      const result = await run(wrongSecret, '{ locations(first: 1) { nodes { name } } people(first: 1) { nodes { name } } }', as(WITH_SHIFTS));
      expect(result.data?.['locations']).toBeNull();
      expect(result.data?.['people'].nodes).toHaveLength(1);
      expect(result.errors?.map((error) => error.extensions?.code)).toContain('UNAUTHENTICATED');
    } finally {
      await wrongSecret.stop();
    }
  });

  /**
   * The same supergraph with a second instance of our subgraph in verified-identity
   * mode (WFS_JWKS_URL against a real JWKS endpoint on loopback), on the same
   * emulator, behind its own gateway. The gateway propagates the client's
   * `Authorization` header by router.yaml's rules, exactly as it does `x-tenant-id`.
   */
  describe('in verified-identity mode (JWT)', () => {
    let idp: TestIdentityProvider;
    let jwtSubgraph: TestSubgraph;
    let jwtGateway: ApolloServer<GatewayContext>;
    const jwtFetches: SubgraphFetch[] = [];

    beforeAll(async () => {
      idp = await startTestIdentityProvider();
      jwtSubgraph = await startTestSubgraph({}, { WFS_ROUTER_SECRET: ROUTER_SECRET, ...idp.env }, {}, subgraph.emulator);
      jwtGateway = await startGateway({ wfs: jwtSubgraph.server.url, people: people.url }, { WFS_ROUTER_SECRET: ROUTER_SECRET }, jwtFetches);
    });

    afterAll(async () => {
      await jwtGateway?.stop();
      await jwtSubgraph?.close();
      await idp?.close();
    });

    const bearer = async (tenant: EmulatorTenant) => `Bearer ${await idp.sign({ tenant_id: tenant.tenantId })}`;

    it('router.yaml propagates the client Authorization header to every subgraph', () => {
      expect(headerRules.all.request).toContainEqual({ propagate: { named: 'authorization' } });
    });

    it("serves the verified token's tenant and ignores the tenant header sent beside it", async () => {
      const query = '{ locations(first: 100) { nodes { id name headcount } } shifts(first: 100) { nodes { id location { id } user { id name } notes } } }';
      for (const [tokenTenant, headerTenant] of [
        [WITH_SHIFTS, OTHER],
        [OTHER, WITH_SHIFTS],
      ] as const) {
        jwtFetches.length = 0;
        const authorization = await bearer(tokenTenant);
        const result = await run(jwtGateway, query, { authorization, ...as(headerTenant) });
        expect(result.errors).toBeUndefined();
        expect(ids(result.data?.['locations'].nodes)).toEqual(tokenTenant.locations.map((location) => location.id));
        expect(ids(result.data?.['shifts'].nodes)).toEqual(tokenTenant.shifts.map((shift) => shift.id));
        for (const location of result.data?.['locations'].nodes as any[]) expect(location.headcount).toEqual(expect.any(Number));

        // Both headers did reach our subgraph: the tenant header was there to be believed, and was not.
        const toUs = jwtFetches.filter((fetch) => fetch.subgraph === 'wfs');
        expect(toUs.length).toBeGreaterThanOrEqual(1);
        for (const fetch of toUs) {
          expect(fetch.headers).toMatchObject({ authorization, 'x-tenant-id': headerTenant.tenantId, 'router-authorization': ROUTER_SECRET });
        }

        // The trusted-header gateway, given the very same headers, believes the header.
        const trusted = await run(gateway, '{ locations(first: 100) { nodes { id } } }', { authorization, ...as(headerTenant) });
        expect(ids(trusted.data?.['locations'].nodes)).toEqual(headerTenant.locations.map((location) => location.id));
      }
    });

    it('answers a missing or forged token with UNAUTHENTICATED on our fields, while the people fields resolve', async () => {
      const cases: Array<[string, Record<string, string>]> = [
        ['no Authorization, only a tenant header', as(WITH_SHIFTS)],
        ['a token signed with a key the JWKS does not publish', { authorization: `Bearer ${await idp.signWithUnpublishedKey({ tenant_id: WITH_SHIFTS.tenantId })}` }],
        ['an expired token', { authorization: `Bearer ${await idp.sign({ tenant_id: WITH_SHIFTS.tenantId }, { expiresIn: '-1m' })}` }],
        ['a token for another audience', { authorization: `Bearer ${await idp.sign({ tenant_id: WITH_SHIFTS.tenantId }, { audience: 'someone-else' })}` }],
        ['a token with no tenant claim', { authorization: `Bearer ${await idp.sign({ sub: 'user-1' })}` }],
        ['not a JWT', { authorization: 'Bearer not.a.jwt', ...as(WITH_SHIFTS) }],
      ];
      subgraph.emulator.resetCounters();
      for (const [name, headers] of cases) {
        const result = await run(jwtGateway, '{ locations(first: 2) { nodes { id } } shifts(first: 2) { nodes { id notes } } people(first: 2) { nodes { name } } }', headers);
        const summary = {
          name,
          locations: result.data?.['locations'],
          shifts: result.data?.['shifts'],
          people: result.data?.['people']?.nodes?.length,
          errors: result.errors?.map((error) => ({ path: error.path, code: error.extensions?.code, serviceName: error.extensions?.serviceName })),
        };
        expect(summary).toEqual({
          name,
          locations: null,
          shifts: null,
          people: 2,
          errors: [
            { path: ['locations'], code: 'UNAUTHENTICATED', serviceName: 'wfs' },
            { path: ['shifts'], code: 'UNAUTHENTICATED', serviceName: 'wfs' },
          ],
        });
        // The subgraph's own message arrives, not a gateway placeholder.
        for (const error of result.errors ?? []) expect(error.message).toMatch(/bearer|authorization/i);
      }
      // Refused before any upstream work.
      expect(listsCalled(subgraph.emulator.counters.listRequests)).toEqual({});
      expect(subgraph.emulator.counters.tokenRequests).toBe(0);
    });

    it('answers a verified token for a tenant not configured here with FORBIDDEN', async () => {
      const authorization = `Bearer ${await idp.sign({ tenant_id: '99999999-0000-4000-8000-000000000099' })}`;
      const result = await run(jwtGateway, '{ locations(first: 1) { nodes { id } } people(first: 1) { nodes { name } } }', { authorization });
      expect(result.data?.['locations']).toBeNull();
      expect(result.data?.['people'].nodes).toHaveLength(1);
      expect(result.errors?.map((error) => ({ path: error.path, code: error.extensions?.code }))).toEqual([{ path: ['locations'], code: 'FORBIDDEN' }]);
    });

    it('batches the entity joins here too: at most 3 upstream list calls for 50 joined shifts', async () => {
      await expectJoinedShiftsBatched(jwtGateway, { authorization: await bearer(LARGE), ...as(WITH_SHIFTS) }, jwtSubgraph, jwtFetches);
    });
  });
});
