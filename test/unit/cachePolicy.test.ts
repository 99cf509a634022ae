import { bodyDigest, CachePolicy, headersOf, NOT_KEPT, taken } from '../../src/cache/policy';
import { CacheTags } from '../../src/cache/tags';
import type { GraphQLContext } from '../../src/graphql/data/context';

/**
 * The cache policy (src/cache/policy.ts) alone: which requests are identical (for
 * sharing and for answers kept whole), and the headers a decision writes. The decision
 * itself is exercised through Apollo Server in test/integration/caching.test.ts and
 * against the built server in test/e2e/cacheVary.test.ts.
 */

const BODY = '{"query":"{ x }"}';
const demo = { tenantHeader: 'x-tenant-id', defaultTenant: 'demo-1' };
const policy = new CachePolicy({ freshnessSeconds: 30, tags: new CacheTags(Buffer.alloc(32)), resources: undefined as never, identityHeaders: ['x-tenant-id'], demo, now: Date.now });

/** A context whose identity resolves to `tenantId` (undefined: refused). */
function contextOf(tenantId: string | undefined): GraphQLContext {
  return {
    tenant: async () => {
      if (tenantId === undefined) throw new Error('refused');
      return { tenantId };
    },
    signal: new AbortController().signal,
  } as unknown as GraphQLContext;
}

it('keys one JSON object POSTed without a query string, for the company it names, and nothing else', async () => {
  const headers = { 'content-type': 'application/json', 'x-tenant-id': 'a' };
  const key = await policy.requestKey(contextOf('a'), { headers, digest: bodyDigest(BODY), search: false });
  expect(key).toBeDefined();
  // Another company, another body: another key.
  expect(await policy.requestKey(contextOf('b'), { headers: { ...headers, 'x-tenant-id': 'b' }, digest: bodyDigest(BODY), search: false })).not.toBe(key);
  expect(await policy.requestKey(contextOf('a'), { headers, digest: bodyDigest(`${BODY} `), search: false })).not.toBe(key);
  // Worked out alone: a GET or a batch (no digest), a query string, a trace asked for, a refused identity.
  expect(await policy.requestKey(contextOf('a'), { headers, digest: undefined, search: false })).toBeUndefined();
  expect(await policy.requestKey(contextOf('a'), { headers, digest: bodyDigest(BODY), search: true })).toBeUndefined();
  expect(await policy.requestKey(contextOf('a'), { headers: { ...headers, 'apollo-federation-include-trace': 'ftv1' }, digest: bodyDigest(BODY), search: false })).toBeUndefined();
  expect(await policy.requestKey(contextOf(undefined), { headers, digest: bodyDigest(BODY), search: false })).toBeUndefined();
});

it("never keys demo mode's default tenant: a request naming no company shares nothing, not even with one naming the default", async () => {
  const named = await policy.requestKey(contextOf('demo-1'), { headers: { 'x-tenant-id': 'demo-1' }, digest: bodyDigest(BODY), search: false });
  expect(named).toBeDefined();
  for (const headers of [{}, { 'x-tenant-id': '  ' }]) {
    expect(await policy.requestKey(contextOf('demo-1'), { headers, digest: bodyDigest(BODY), search: false })).toBeUndefined();
  }
});

it('writes no-store without Vary, and private, max-age with the identity headers in Vary', () => {
  expect(headersOf(NOT_KEPT)).toEqual({ 'cache-control': 'no-store' });
  expect(headersOf({ maxAge: 0, vary: 'x-tenant-id' })).toEqual({ 'cache-control': 'no-store' });
  expect(headersOf({ maxAge: 12, vary: 'x-tenant-id' })).toEqual({ 'cache-control': 'private, max-age=12', vary: 'x-tenant-id' });
  // A request that takes another's answer takes its decision, never kept whole.
  const keep = { until: 1, sources: [], operationName: null, lastSecond: () => undefined };
  expect(taken({ maxAge: 12, vary: 'authorization', keep })).toEqual({ maxAge: 12, vary: 'authorization' });
});
