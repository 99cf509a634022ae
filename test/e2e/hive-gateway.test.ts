import { request } from 'undici';
import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';
import { startTestIdentityProvider, type TestIdentityProvider } from '../helpers/jwks';
import { as, gatewayTenants } from '../helpers/fixtures';
import { HIVE_ROUTER_SECRET as ROUTER_SECRET, startHiveGateway, type GatewayResult as Result, type RunningGateway } from '../helpers/hiveGateway';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * Hive Gateway as the second gateway: `@graphql-hive/gateway` runs the committed
 * `supergraph.graphql` with the committed `router/gateway.config.ts` (only the
 * subgraph locations and the secret come from the test), over real HTTP on loopback,
 * in front of our subgraph on the emulator and the example people subgraph
 * (test/helpers/hiveGateway.ts). The frontends' clients through it, live:
 * hive-gateway-live.test.ts.
 */

const { withShifts: WITH_SHIFTS, other: OTHER, noShifts: NO_SHIFTS } = gatewayTenants();

const ids = (nodes: Array<{ id: string }> | undefined) => nodes?.map((node) => node.id);
const codes = (result: Result) => result.errors?.map((error) => ({ path: error.path, code: error.extensions?.code }));

describe('Hive Gateway in front of the subgraph and the people subgraph', () => {
  let subgraph: TestSubgraph;
  let people: RunningPeopleSubgraph;
  let gateway: RunningGateway;

  beforeAll(async () => {
    subgraph = await startTestSubgraph({ tenants: [WITH_SHIFTS, OTHER, NO_SHIFTS] }, { WFS_ROUTER_SECRET: ROUTER_SECRET, WFS_POLL_INTERVAL_SECONDS: '1' });
    people = await startPeopleSubgraph();
    gateway = await startHiveGateway({ wfs: subgraph.server.url, people: people.url }, ROUTER_SECRET);
  });

  afterAll(async () => {
    await gateway?.close();
    await people?.close();
    await subgraph?.close();
  });

  it('carries a live update: a shift changed upstream reaches a subscriber through the gateway, joined with people fields', async () => {
    const events: any[] = [];
    const controller = new AbortController();
    // Server-Sent Events from the gateway (GraphQL over SSE, distinct connections mode);
    // the gateway subscribes to our subgraph over graphql-ws.
    const response = await request(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...as(WITH_SHIFTS) },
      body: JSON.stringify({ query: 'subscription { shiftChanges { kind nodeId shift { id end location { name headcount } } } }' }),
      signal: controller.signal,
    });
    expect(response.statusCode).toBe(200);
    const reading = (async () => {
      let buffer = '';
      for await (const chunk of response.body) {
        buffer += String(chunk);
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').find((line) => line.startsWith('data:'));
          if (block.includes('event: next') && data) events.push(JSON.parse(data.slice(5)));
        }
      }
    })().catch(() => undefined);
    try {
      await waitFor(() => subgraph.server.live.subscriptions === 1, 'the gateway subscribed to our subgraph');
      await waitFor(async () => (await counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as never, { outcome: 'ok' })) >= 1, 'the baseline poll');
      const shift = subgraph.emulator.tenants[0]!.shifts[2]!;
      shift.end = shift.end.replace(/:00([+-])/, ':30$1');
      await waitFor(() => events.length >= 1, 'the change through the gateway', 30_000);
      expect(events[0]).toEqual({
        data: { shiftChanges: { kind: 'UPDATED', nodeId: expect.any(String), shift: { id: shift.id, end: shift.end, location: { name: expect.any(String), headcount: expect.any(Number) } } } },
      });
    } finally {
      controller.abort();
      await reading;
    }
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'the gateway ended its subscription');
  });

  it('joins across both subgraphs for the tenant the header names', async () => {
    for (const tenant of [WITH_SHIFTS, OTHER]) {
      const result = await gateway.query(
        '{ shifts(first: 5) { nodes { id location { id name headcount manager { name } } user { id name } notes } } people(first: 2) { nodes { name } } }',
        as(tenant),
      );
      expect(result.errors).toBeUndefined();
      const nodes = result.data?.['shifts'].nodes as any[];
      expect(ids(nodes)).toEqual(tenant.shifts.slice(0, 5).map((shift) => shift.id));
      const names = new Map(tenant.locations.map((location) => [location.id, location.name]));
      nodes.forEach((node, index) => {
        const upstream = tenant.shifts[index]!;
        expect(node.location).toEqual({ id: upstream.location, name: names.get(upstream.location), headcount: expect.any(Number), manager: { name: expect.any(String) } });
        expect(node.user).toEqual(upstream.user === null ? null : { id: upstream.user, name: expect.any(String) });
      });
      expect(result.data?.['people'].nodes).toHaveLength(2);
    }
  });

  it('keeps error codes and partial data: FORBIDDEN shifts beside served locations and people', async () => {
    const result = await gateway.query('{ locations(first: 2) { nodes { name headcount } } shifts(first: 2) { nodes { id } } people(first: 1) { nodes { name } } }', as(NO_SHIFTS));
    expect(result.data?.['locations'].nodes).toEqual(NO_SHIFTS.locations.slice(0, 2).map((location) => ({ name: location.name, headcount: expect.any(Number) })));
    expect(result.data?.['people'].nodes).toHaveLength(1);
    expect(result.data?.['shifts']).toBeNull();
    expect(codes(result)).toEqual([{ path: ['shifts'], code: 'FORBIDDEN' }]);
  });

  it('passes BAD_USER_INPUT through with its path', async () => {
    const result = await gateway.query('{ locations(first: 0) { nodes { id } } people(first: 1) { nodes { name } } }', as(WITH_SHIFTS));
    expect(result.data?.['locations']).toBeNull();
    expect(result.data?.['people'].nodes).toHaveLength(1);
    expect(codes(result)).toEqual([{ path: ['locations'], code: 'BAD_USER_INPUT' }]);
  });

  it('is refused by our subgraph when the gateway does not send the router secret', async () => {
    const wrong = await startHiveGateway({ wfs: subgraph.server.url, people: people.url }, 'not-the-router-secret-0123');
    try {
      const result = await wrong.query('{ locations(first: 1) { nodes { name } } people(first: 1) { nodes { name } } }', as(WITH_SHIFTS));
      expect(result.data?.['locations']).toBeNull();
      expect(result.data?.['people'].nodes).toHaveLength(1);
      expect(result.errors?.map((error) => error.extensions?.code)).toContain('UNAUTHENTICATED');
    } finally {
      await wrong.close();
    }
  });

  /**
   * The people subgraph stopped: its fields on our entities are nullable, so the
   * gateway still serves our data and reports an error only at those fields.
   */
  it('serves our data when the people subgraph is down, with errors only for its fields', async () => {
    const doomed = await startPeopleSubgraph();
    const partial = await startHiveGateway({ wfs: subgraph.server.url, people: doomed.url }, ROUTER_SECRET);
    try {
      const before = await partial.query('{ locations(first: 3) { nodes { id name headcount } } }', as(WITH_SHIFTS));
      expect(before.errors).toBeUndefined();
      await doomed.close();
      const result = await partial.query('{ locations(first: 3) { nodes { id name headcount } } shifts(first: 2) { nodes { id notes } } }', as(WITH_SHIFTS));
      expect(result.data?.['locations'].nodes).toEqual(WITH_SHIFTS.locations.slice(0, 3).map((location) => ({ id: location.id, name: location.name, headcount: null })));
      expect(ids(result.data?.['shifts'].nodes)).toEqual(WITH_SHIFTS.shifts.slice(0, 2).map((shift) => shift.id));
      // Errors only at the people fields (Hive Gateway reports a list field's path without item indexes).
      const where = new Set(result.errors?.map((error) => (error.path ?? []).filter((segment) => typeof segment === 'string').join('.')));
      expect([...where].sort()).toEqual(['locations.nodes.headcount', 'shifts.nodes.notes']);
    } finally {
      await partial.close();
    }
  });

  describe('in verified-identity mode (JWT)', () => {
    let idp: TestIdentityProvider;
    let jwtSubgraph: TestSubgraph;
    let jwtGateway: RunningGateway;

    beforeAll(async () => {
      idp = await startTestIdentityProvider();
      jwtSubgraph = await startTestSubgraph({}, { WFS_ROUTER_SECRET: ROUTER_SECRET, ...idp.env }, {}, subgraph.emulator);
      jwtGateway = await startHiveGateway({ wfs: jwtSubgraph.server.url, people: people.url }, ROUTER_SECRET);
    });

    afterAll(async () => {
      await jwtGateway?.close();
      await jwtSubgraph?.close();
      await idp?.close();
    });

    it("serves the verified token's tenant, ignoring the tenant header beside it, joined with people fields", async () => {
      const authorization = `Bearer ${await idp.sign({ tenant_id: OTHER.tenantId })}`;
      const result = await jwtGateway.query('{ locations(first: 100) { nodes { id headcount } } }', { authorization, ...as(WITH_SHIFTS) });
      expect(result.errors).toBeUndefined();
      expect(ids(result.data?.['locations'].nodes)).toEqual(OTHER.locations.map((location) => location.id));
      for (const node of result.data?.['locations'].nodes as any[]) expect(node.headcount).toEqual(expect.any(Number));
    });

    it('answers a missing or forged token with UNAUTHENTICATED on our fields while the people fields resolve', async () => {
      for (const headers of [as(WITH_SHIFTS), { authorization: `Bearer ${await idp.signWithUnpublishedKey({ tenant_id: WITH_SHIFTS.tenantId })}` }]) {
        const result = await jwtGateway.query('{ locations(first: 2) { nodes { id } } people(first: 2) { nodes { name } } }', headers);
        expect(result.data?.['locations']).toBeNull();
        expect(result.data?.['people'].nodes).toHaveLength(2);
        expect(codes(result)).toEqual([{ path: ['locations'], code: 'UNAUTHENTICATED' }]);
      }
    });
  });
});
