import type { ApolloServerPlugin } from '@apollo/server';
import { once } from 'node:events';
import type { GraphQLContext } from '../../src/graphql/data/context';
import { as, testTenant } from '../helpers/fixtures';
import { waitFor } from '../helpers/waitFor';
import { errorCodes, postGraphQL, startTestSubgraph, writeTenantsFile, type TestSubgraph } from '../helpers/subgraph';

/**
 * What the per-tenant entity index serves from memory is held to the same rules as
 * an upstream call (docs/operations.md, "Memory per company"): the tenant's current scopes, the request's
 * call budget, and the request's life (a client that left gets no more work).
 * Over real HTTP against the emulator; a subgraph per test, so every index starts cold.
 */

// 500 shifts over 50 locations: 5 pages of 100, and each location has a shift on every page.
const A = testTenant('a', { locations: 50, shifts: 500 });
const LOCATION = A.locations[1]!.id;
const shiftOnPage = (page: number) => A.shifts[(page - 1) * 100 + 1]!.id;

const ENTITIES = `query ($r: [_Any!]!) { _entities(representations: $r) { ... on Shift { id } } }`;
const FILTERED = `query ($id: ID!) { shifts(first: 20, filter: { locationId: $id }) { nodes { id } } }`;
const shiftRefs = (...ids: string[]) => ({ r: ids.map((id) => ({ __typename: 'Shift', id })) });

let subgraph: TestSubgraph | undefined;
afterEach(async () => {
  await subgraph?.close();
  subgraph = undefined;
});

const shiftCalls = () => subgraph!.emulator.counters.listRequests.shifts;

describe('a scope withdrawn while the index holds the records', () => {
  // With a window, the same requests were answered whole before the scope went (docs/caching.md, "Whole answers").
  it.each(['0', '30'])('stops shifts served from memory at once (FORBIDDEN), not when the index expires (WFS_FRESHNESS_SECONDS=%s)', async (window) => {
    // The tenants file asks for no scope in particular: the token carries what the upstream grants now.
    const tenantsFile = writeTenantsFile([{ ...A, grantedScopes: [] }]);
    subgraph = await startTestSubgraph({ tenants: [A] }, { WFS_TENANTS_FILE: tenantsFile, WFS_FRESHNESS_SECONDS: window });
    // With a window: read three times, the answers kept whole the second time and served whole the third.
    for (let read = 0; read < (window === '0' ? 1 : 3); read++) {
      const before = await subgraph.query(ENTITIES, shiftRefs(shiftOnPage(5)), as(A));
      expect(before.data?._entities).toEqual([{ id: shiftOnPage(5) }]);
      const warm = await subgraph.query(FILTERED, { id: LOCATION }, as(A));
      expect(warm.errors).toBeUndefined();
    }
    const answeredWhole = (await subgraph.server.metrics.registry.getSingleMetric('wfs_cache_requests_total')!.get()).values.find((sample) => sample.labels.cache === 'whole_answers' && sample.labels.result === 'hit')?.value ?? 0;
    expect(answeredWhole).toBe(window === '0' ? 0 : 2);

    // The upstream withdraws `shifts.read` and revokes the tokens; a locations call renews the token, without the scope.
    const tenant = subgraph.emulator.tenants[0]!;
    tenant.grantedScopes = tenant.grantedScopes.filter((scope) => scope !== 'shifts.read');
    subgraph.emulator.revokeTokens(A.tenantId);
    const renewed = await subgraph.query('{ locations(first: 1) { nodes { id } } }', {}, as(A));
    expect(renewed.errors).toBeUndefined();
    const callsBefore = shiftCalls();

    const entity = await subgraph.query(ENTITIES, shiftRefs(shiftOnPage(5)), as(A));
    expect(errorCodes(entity)).toEqual(['FORBIDDEN']);
    expect(entity.data?._entities).toEqual([null]);
    const byId = await subgraph.query(`{ shift(id: "${shiftOnPage(2)}") { id } }`, {}, as(A));
    expect(errorCodes(byId)).toEqual(['FORBIDDEN']);
    const filtered = await subgraph.query(FILTERED, { id: LOCATION }, as(A));
    expect(errorCodes(filtered)).toEqual(['FORBIDDEN']);
    expect(filtered.data?.shifts).toBeNull();
    expect(shiftCalls()).toBe(callsBefore);
  });
});

describe('pages served from the index', () => {
  it('count against the request call budget, like the calls they stand for', async () => {
    subgraph = await startTestSubgraph({ tenants: [A] }, { WFS_UPSTREAM_CALL_BUDGET: '3' });
    // Two lookups fill the index with all 5 pages (3 calls, then the 2 after them).
    expect((await subgraph.query(ENTITIES, shiftRefs(shiftOnPage(3)), as(A))).errors).toBeUndefined();
    expect((await subgraph.query(ENTITIES, shiftRefs(shiftOnPage(5)), as(A))).errors).toBeUndefined();
    expect(shiftCalls()).toBe(5);

    // The filtered scan needs all 5 held pages: the 4th is past the budget, though in memory.
    const filtered = await subgraph.query(FILTERED, { id: LOCATION }, as(A));
    expect(errorCodes(filtered)).toEqual(['UPSTREAM_BAD_RESPONSE']);
    expect(filtered.errors![0]!.message).toContain('call budget of this request was reached');
    expect(shiftCalls()).toBe(5);
  });
});

describe('a request whose client went away', () => {
  it('does no more work in memory: its reads stop with UPSTREAM_UNAVAILABLE', async () => {
    const client = new AbortController();
    const answers: Array<ReadonlyArray<{ extensions?: Record<string, unknown> }>> = [];
    let leave = false;
    const plugin: ApolloServerPlugin<GraphQLContext> = {
      async requestDidStart() {
        return {
          // Before execution, the client leaves and the server notices: execution then starts on an over request.
          async executionDidStart({ contextValue }) {
            if (!leave) return;
            client.abort();
            if (!contextValue.signal.aborted) await once(contextValue.signal, 'abort');
          },
          async willSendResponse({ response }) {
            if (response.body.kind === 'single') answers.push(response.body.singleResult.errors ?? []);
          },
        };
      },
    };
    subgraph = await startTestSubgraph({ tenants: [A] }, {}, { plugins: [plugin] });
    expect((await subgraph.query(ENTITIES, shiftRefs(shiftOnPage(5)), as(A))).errors).toBeUndefined();
    const callsBefore = shiftCalls();

    leave = true;
    await expect(postGraphQL(subgraph.server.url, { query: FILTERED, variables: { id: LOCATION } }, as(A), client.signal)).rejects.toThrow();
    await waitFor(() => answers.length === 2, 'the abandoned request to finish');
    expect(answers[1]!.map((error) => error.extensions?.code)).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(shiftCalls()).toBe(callsBefore);
  });
});
