import { Writable } from 'node:stream';
import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLContext } from '../../src/graphql/data/context';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { HeldCalls } from '../helpers/heldCalls';
import { makeLocations, startForeignUpstream, type ForeignUpstream } from '../helpers/foreignUpstream';
import { foreignUpstreamEnv, postGraphQL } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * Identical requests in flight share one execution (src/http/sharedRequests.ts); with a
 * freshness window, every request that took the leader's answer carries the leader's
 * cache policy too (docs/caching.md): the same `Cache-Control` and cache tags. The fake
 * upstream holds the list call until the test releases it.
 */

let up: ForeignUpstream;
let server: RunningServer;
const heldCalls = new HeldCalls();
let resolved = 0;
const counting: ApolloServerPlugin<GraphQLContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation() {
        resolved += 1;
      },
    };
  },
};

beforeAll(async () => {
  up = await startForeignUpstream();
  up.add({ name: 'alpha', locations: makeLocations(12), fault: heldCalls.hold('alpha') });
  const config = loadConfig(foreignUpstreamEnv(up, { WFS_CURSOR_SECRET: 'cache-sharing-cursor-secret-0123456789abcd', LOG_LEVEL: 'silent', WFS_FRESHNESS_SECONDS: '30' }));
  server = await startServer(config, { logger: createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() })), plugins: [counting] });
});

afterAll(async () => {
  heldCalls.holding = false;
  heldCalls.release('alpha');
  await up?.close();
  await server?.close();
});

it("gives every request that shared an execution the leader's Cache-Control and cache tags", async () => {
  const sharedBefore = await counterTotal(server.metrics.requestsShared);
  const answers = Array.from({ length: 10 }, () => postGraphQL(server.url, { query: '{ locations(first: 5) { nodes { id name } } }' }, { 'x-tenant-id': up.tenant('alpha').tenantId }));
  await waitFor(() => resolved === 10 && heldCalls.count('alpha') === 1, 'all 10 requests past validation, one upstream call held');
  heldCalls.release('alpha');
  const responses = await Promise.all(answers);
  expect((await counterTotal(server.metrics.requestsShared)) - sharedBefore).toBe(9);
  const leader = responses[0]!;
  expect(leader.headers?.['cache-control']).toMatch(/^private, max-age=(30|29)$/);
  expect(leader.extensions?.apolloCacheTags).toEqual([expect.stringMatching(/^wfs-[0-9a-f]{16}:locations$/)]);
  for (const response of responses) {
    expect(response.headers?.['cache-control']).toBe(leader.headers?.['cache-control']);
    expect(response.extensions).toEqual(leader.extensions);
    expect(response.data).toEqual(leader.data);
  }
});
