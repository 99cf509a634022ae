/**
 * Hive Gateway's response cache, kept per company and told of our changes
 * (docs/caching.md, "Hive Gateway's response cache"); gateway.config.ts wires it.
 *
 * - `cacheSession`: the company a request acts for, as the cache's session, or null;
 *   a request with none is not cached at all (`enabled`), never shared.
 * - `useSubgraphMaxAgeOnly`: a subgraph answer without a positive `max-age` (our
 *   `no-store`, or no Cache-Control at all) keeps the whole response out of the cache.
 * - `useCacheInvalidationEndpoint`: the POST our subgraph sends to Apollo Router's
 *   invalidation endpoint (src/live/invalidation.ts), accepted here too.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { GatewayPlugin } from '@graphql-hive/gateway';

/**
 * Everything the subgraph decides the company from: the tenant header (trusted-header
 * mode) and the bearer token (verified-identity mode, where the subgraph ignores the
 * header). Both go into the session, so two requests share entries only when they send
 * the same of each; neither: null, and `enabled` keeps the request out of the cache
 * (Hive's `session` returning null alone would mean one entry shared by every caller).
 * Hashed, so the cache's keys hold no token.
 */
export function cacheSession(request: Request): string | null {
  const tenant = request.headers.get('x-tenant-id');
  const authorization = request.headers.get('authorization');
  if (!tenant && !authorization) return null;
  return createHash('sha256').update(JSON.stringify([tenant, authorization])).digest('hex');
}

/** A `max-age` or `s-maxage` above 0, and neither `no-store` nor `no-cache`. */
function keepable(cacheControl: string | null): boolean {
  if (cacheControl === null) return false;
  const directives = cacheControl.toLowerCase().split(',').map((part) => part.trim());
  if (directives.includes('no-store') || directives.includes('no-cache')) return false;
  return directives.some((directive) => /^(?:max-age|s-maxage)=\d+$/.test(directive) && Number(directive.split('=')[1]) > 0);
}

/**
 * Hive's response cache takes a subgraph's `max-age` as a cap on the TTL, but an answer
 * with `no-store` or no Cache-Control leaves the TTL at the configured one: our answers
 * that must not be kept (errors, demo mode's default tenant, anything at a freshness of
 * 0) would be. This rewrites such an answer's header to `no-store, max-age=0` before the
 * cache reads it, so the response that used it gets a TTL of 0 and is not stored. It
 * wraps the fetch itself (not an onFetch done hook, which would run after the cache's).
 */
export function useSubgraphMaxAgeOnly(): GatewayPlugin {
  let fetchAPI: { Response: typeof Response; Headers: typeof Headers } = { Response, Headers };
  return {
    onYogaInit({ yoga }) {
      fetchAPI = yoga.fetchAPI;
    },
    onFetch({ executionRequest, fetchFn, setFetchFn }) {
      if (!executionRequest) return;
      setFetchFn(async (url, options, context, info) => {
        const response = await fetchFn(url, options, context, info);
        if (keepable(response.headers.get('cache-control'))) return response;
        const headers = new fetchAPI.Headers(response.headers);
        headers.set('cache-control', 'no-store, max-age=0');
        return new fetchAPI.Response(await response.arrayBuffer(), { status: response.status, statusText: response.statusText, headers });
      });
    },
  };
}

/** The part of Hive's cache (the gateway's `cache`, where `responseCaching` keeps its entries) this plugin uses. */
export interface ResponseCacheStore {
  getKeysByPrefix(prefix: string): Promise<string[]> | string[];
  delete(key: string): Promise<boolean | void> | boolean | void;
}

/** Where @graphql-mesh/plugin-response-cache files its entries in the gateway's cache (its getCacheForResponseCache): `response-cache:<entry>`, and per entity an entry holds `response-cache:<Type>.<id>:<entry>`. */
const PREFIX = 'response-cache:';
/** Our lists, by the name in a cache tag, and the type of their records (src/upstream/resources; test/e2e/hive-gateway.test.ts holds them equal). */
export const LIST_TYPES: Readonly<Record<string, string>> = { locations: 'Location', shifts: 'Shift' };

type Invalidation =
  | { kind: 'subgraph'; subgraph: string }
  | { kind: 'type'; subgraph: string; type: string }
  | { kind: 'cache_tag'; subgraphs: string[]; cache_tag: string };

function isInvalidation(item: unknown): item is Invalidation {
  if (typeof item !== 'object' || item === null) return false;
  const value = item as Record<string, unknown>;
  if (value['kind'] === 'subgraph') return typeof value['subgraph'] === 'string';
  if (value['kind'] === 'type') return typeof value['subgraph'] === 'string' && typeof value['type'] === 'string';
  if (value['kind'] === 'cache_tag') return Array.isArray(value['subgraphs']) && value['subgraphs'].every((name) => typeof name === 'string') && typeof value['cache_tag'] === 'string';
  return false;
}

/** A record's tag, `wfs-<company>:<list>:<id>`: the entity it names. A list's tag (`wfs-<company>:<list>`) names none. */
function recordOf(tag: string): { typename: string; id: string } | undefined {
  const match = /^wfs-[0-9a-f]+:([a-z]+):(.+)$/.exec(tag);
  const typename = match && LIST_TYPES[match[1]!];
  return typename ? { typename, id: match![2]! } : undefined;
}

/**
 * Applies invalidations to Hive's response cache; resolves to the entries dropped.
 *
 * A record's tag drops exactly the entries that hold that record (the response cache's
 * `invalidate([{ typename, id }])`, done on the same keys: every company's entry holding
 * an entity of that type and id, since the gateway cannot tell companies apart by our
 * tags). Anything else (a list's tag, a type, a whole subgraph) drops **every** entry:
 * a tag names its company by an HMAC the gateway cannot tie to a session, and an answer
 * may have read a list without holding any of its records (an empty page, a filter that
 * now matches, a count), so no narrower set is sure to hold every answer the change
 * touched. More than needed, never less: the cost is misses, not stale answers.
 */
export async function applyInvalidations(cache: ResponseCacheStore, invalidations: readonly Invalidation[]): Promise<number> {
  const records = invalidations.map((item) => (item.kind === 'cache_tag' ? recordOf(item.cache_tag) : undefined));
  if (records.some((record) => record === undefined)) {
    const keys = await cache.getKeysByPrefix(PREFIX);
    await Promise.all(keys.map((key) => cache.delete(key)));
    // The entries themselves, not their entity index keys.
    return keys.filter((key) => !key.slice(PREFIX.length).includes(':')).length;
  }
  const entries = new Set<string>();
  for (const record of records) {
    const prefix = `${PREFIX}${record!.typename}.${record!.id}:`;
    for (const key of await cache.getKeysByPrefix(prefix)) {
      entries.add(key.slice(prefix.length));
      await cache.delete(key);
    }
  }
  for (const entry of entries) await cache.delete(`${PREFIX}${entry}`);
  return entries.size;
}

function sameKey(given: string | null, key: string): boolean {
  if (given === null) return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(key));
}

/**
 * The invalidation endpoint at `path` on the gateway's own port, in Apollo Router's format
 * (a JSON array of `{kind: "subgraph"|"type"|"cache_tag", …}`, the shared key as the whole
 * `Authorization` value; answers `{"count": n}`), so WFS_CACHE_INVALIDATION_URLS can name
 * Hive Gateways and Apollo Routers alike. A wrong or missing key: 401; a malformed body: 400.
 */
export function useCacheInvalidationEndpoint(options: { cache: ResponseCacheStore; key: string; path?: string }): GatewayPlugin {
  const path = options.path ?? '/invalidation';
  return {
    onRequest({ url, request, endResponse, fetchAPI }) {
      if (url.pathname !== path) return;
      const answer = (status: number, body: unknown) => endResponse(new fetchAPI.Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } }));
      if (request.method !== 'POST') return answer(405, { error: 'POST only' });
      if (!sameKey(request.headers.get('authorization'), options.key)) return answer(401, { error: 'invalid authorization' });
      return request
        .json()
        .catch(() => undefined)
        .then(async (body: unknown) => {
          if (!Array.isArray(body) || !body.every(isInvalidation)) return answer(400, { error: 'expected a JSON array of invalidations' });
          return answer(200, { count: await applyInvalidations(options.cache, body) });
        });
    },
  };
}
