/**
 * Hive Gateway's response cache, kept per company and told of our changes
 * (docs/caching.md, "Hive Gateway's response cache"); gateway.config.ts wires it.
 *
 * - `identitySettings`: what decides the company, from the subgraph's own variables.
 * - `cacheSession`: the company a request acts for, as the cache's session, or null;
 *   a request with none is not cached at all (`enabled`), never shared.
 * - `useSubgraphMaxAgeOnly`: a subgraph answer without a positive `max-age` (our
 *   `no-store`, or no Cache-Control at all) keeps the whole response out of the cache.
 * - `useCacheInvalidationEndpoint`: the POST our subgraph sends to Apollo Router's
 *   invalidation endpoint (src/live/invalidation.ts), accepted here too.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { GatewayPlugin } from '@graphql-hive/gateway';
import { ResponseStore } from './responseStore';

/**
 * The subgraph's identity settings (docs/configuration.md), read from the same variables
 * with the same defaults, so a gateway in front of it keys its cache on what the subgraph
 * decides the company from: router/main.rhai reads them too (test/integration/composition.test.ts
 * holds the three alike).
 */
export const IDENTITY_VARIABLES = {
  /** The header that names the company in trusted-header mode. */
  tenantHeader: { name: 'WFS_TENANT_HEADER', default: 'x-tenant-id' },
  /** The verified token's claim that names it in verified-identity mode. */
  tenantClaim: { name: 'WFS_TENANT_CLAIM', default: 'tenant_id' },
  /** Set: verified-identity mode (the subgraph verifies the bearer JWT and ignores the header). */
  jwks: { name: 'WFS_JWKS_URL', default: '' },
} as const;

export interface IdentitySettings {
  /** Lower case, as the subgraph compares it. */
  readonly tenantHeader: string;
  readonly tenantClaim: string;
  /** Verified-identity mode. */
  readonly verified: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

function setting(env: Env, variable: { name: string; default: string }): string {
  return env[variable.name]?.trim() || variable.default;
}

export function identitySettings(env: Env): IdentitySettings {
  return {
    tenantHeader: setting(env, IDENTITY_VARIABLES.tenantHeader).toLowerCase(),
    tenantClaim: setting(env, IDENTITY_VARIABLES.tenantClaim),
    verified: setting(env, IDENTITY_VARIABLES.jwks) !== '',
  };
}

/**
 * The session of Hive's response cache: everything the subgraph decides the company from,
 * hashed (the cache's keys hold no token). The tenant header (`WFS_TENANT_HEADER`) and the
 * `Authorization` header go in together in both modes: this gateway does not verify tokens,
 * so in verified-identity mode the token (which holds the claim) is what names the company,
 * and in trusted-header mode the header is, whatever `Authorization` a caller shares with
 * others (a service token in front of several companies). Null, and `enabled` keeps the
 * request out of the cache, when the one the mode needs is missing (the subgraph would
 * refuse it, or answer demo mode's default tenant, which is never kept): Hive's `session`
 * returning null alone would mean one entry shared by every caller.
 */
export function cacheSession(request: Request, identity: IdentitySettings): string | null {
  const tenant = request.headers.get(identity.tenantHeader);
  const authorization = request.headers.get('authorization');
  if (!(identity.verified ? authorization : tenant)) return null;
  return createHash('sha256').update(JSON.stringify([identity.tenantHeader, tenant, authorization])).digest('hex');
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
        // A subscription's stream (SSE, multipart) is passed on as it is: reading it whole
        // would wait for its end, and the response cache keeps no subscription.
        if (/^(text\/event-stream|multipart\/mixed)/.test(response.headers.get('content-type') ?? '')) return response;
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

/** The list's tag a record's tag (`wfs-<company>:<list>:<id>`) belongs to. */
function listOf(tag: string): string | undefined {
  return /^(wfs-[0-9a-f]+:[a-z]+):.+$/.exec(tag)?.[1];
}

/**
 * Applies invalidations to Hive's response cache; resolves to the answers dropped.
 *
 * In the shipped store (router/responseStore.ts), which knows the tags each answer
 * carried: a tag drops the answers that carried it (and a record's tag those that carried
 * its list's tag, which every answer that read the list did), and every answer whose tags
 * nobody heard. So company A's edit to its shifts drops A's answers that read its shifts,
 * and company B's stay. A type or a whole subgraph drops every answer.
 *
 * In another cache (a Redis one shared by several gateways, which does not know the tags):
 * a record's tag drops the entries that hold that record (the response cache's
 * `invalidate([{ typename, id }])`, on the same keys: every company's entry holding an
 * entity of that type and id), and anything else drops **every** entry: an answer may have
 * read a list without holding any of its records (an empty page, a filter, a count). More
 * than needed, never less: the cost is misses, not stale answers.
 */
export async function applyInvalidations(cache: ResponseCacheStore, invalidations: readonly Invalidation[]): Promise<number> {
  if (cache instanceof ResponseStore) {
    if (invalidations.some((item) => item.kind !== 'cache_tag')) return cache.dropAnswers();
    const tags = invalidations.flatMap((item) => (item.kind === 'cache_tag' ? [item.cache_tag, listOf(item.cache_tag) ?? []].flat() : []));
    return cache.dropTagged(tags);
  }
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
