/**
 * Hive Gateway configuration for a supergraph that includes the workforce scheduling
 * subgraph (`wfs`), the counterpart of router.yaml for teams that run Hive Gateway
 * instead of Apollo Router:
 *
 *   WFS_ROUTER_SECRET=... npx hive-gateway supergraph supergraph.graphql -c router/gateway.config.ts
 *
 * Like router.yaml it refuses to start without WFS_ROUTER_SECRET (the `wfs` subgraph
 * must be started with the same value). `test/e2e/hive-gateway.test.ts` runs this
 * very file in front of the subgraph and the example people subgraph.
 */
import { MemPubSub, defineConfig } from '@graphql-hive/gateway';
import { AnswerTags, useAnswerTags } from './answerTags';
import { cacheSession, identitySettings, useCacheInvalidationEndpoint, useSubgraphMaxAgeOnly } from './hiveResponseCache';
import { ResponseStore, type StoreLog } from './responseStore';

type Env = Readonly<Record<string, string | undefined>>;

/** The response cache's TTL cap, in ms: the subgraph's `max-age` (at most its freshness window) is the TTL under it. */
const RESPONSE_CACHE_MAX_TTL_MS = 300_000;

/** The subgraph timeout, below router.yaml's 20 s for `wfs`: our own 15 s request budget answers first. */
const WFS_TIMEOUT_MS = 20_000;
const OTHER_TIMEOUT_MS = 10_000;

/**
 * The response cache's bound, in keys (HIVE_RESPONSE_CACHE_MAX_KEYS): an answer takes
 * 1 + 2 per entity it holds (docs/caching.md, "Sizing Hive Gateway's cache"). Sized for
 * 200 companies each paging through 4 pages of 100 shifts with their users (100 shifts
 * and up to 100 users: 401 keys a page, 320,800 keys), with a quarter to spare; at the
 * 335 bytes a key measured for such pages, about 130 MB of heap when full. The store
 * logs when it evicts an answer no read found: the sign the bound is too small.
 */
const DEFAULT_RESPONSE_CACHE_MAX_KEYS = 400_000;

function maxKeysOf(env: Env): number {
  const given = env.HIVE_RESPONSE_CACHE_MAX_KEYS?.trim();
  if (!given) return DEFAULT_RESPONSE_CACHE_MAX_KEYS;
  const value = Number(given);
  if (!Number.isInteger(value) || value < 1) throw new Error(`HIVE_RESPONSE_CACHE_MAX_KEYS must be a positive integer, got ${JSON.stringify(given)}`);
  return value;
}

export function createGatewayConfig(env: Env) {
  const routerSecret = env.WFS_ROUTER_SECRET;
  if (!routerSecret) throw new Error('WFS_ROUTER_SECRET must be set: the wfs subgraph answers only requests that carry it');
  // What the subgraph decides the company from: its own variables, read here too.
  const identity = identitySettings(env);
  const maxKeys = maxKeysOf(env);
  const answerTags = new AnswerTags();
  return defineConfig({
    supergraph: env.SUPERGRAPH_PATH ?? './supergraph.graphql',
    // Where the response cache keeps its answers (router/responseStore.ts): bounded in keys,
    // told which tags each answer carried, saying when it evicts an answer nobody read.
    cache: ({ log }: { log?: StoreLog }) => new ResponseStore({ maxKeys, log, tagsOf: answerTags.tagsOf }),
    // Where each subgraph runs here; the supergraph's routing URLs are for a laptop.
    transportEntries: {
      wfs: {
        ...(env.SUBGRAPH_WFS_URL && { location: env.SUBGRAPH_WFS_URL }),
        options: {
          // Live updates (`shiftChanges`, `locationChanges`), in the subgraph protocol
          // SUBGRAPH_WFS_SUBSCRIPTIONS names (wfsSubscriptions below): graphql-ws (the
          // default), SSE or Apollo's HTTP callback protocol. Clients subscribe to the
          // gateway over SSE or graphql-ws (the CLI serves it at its GraphQL path); over
          // graphql-ws `context.headers` are the upgrade request's headers with the
          // client's connectionParams merged in, so a browser sends
          // `connectionParams: { 'x-tenant-id': … }` (docs/frontend.md, "Live updates";
          // the subgraph's WFS_TENANT_HEADER, if it names another).
          subscriptions: wfsSubscriptions(env, routerSecret, identity.tenantHeader),
        },
      },
      ...(env.SUBGRAPH_PEOPLE_URL && { people: { location: env.SUBGRAPH_PEOPLE_URL } }),
      // Every subgraph: no sharing of identical subgraph requests in flight. The response
      // cache learns an answer's TTL from the subgraph's `max-age` in a fetch hook of the
      // request that made the fetch; a request that shared another's fetch runs no hook,
      // so it was stored with the cache's own TTL cap (300 s) whatever the subgraph said
      // (`npm run probe:freshness` saw a 5 s window kept for minutes under steady reads).
      // Our subgraph shares identical upstream reads itself and answers kept pages from
      // memory, so the requests this sends again cost it little.
      '*': { options: { deduplicateInflightRequests: false } },
    },
    propagateHeaders: {
      fromClientToSubgraphs: ({ request, subgraphName }) => ({
        // Trusted-header mode: the tenant the caller acts for (WFS_TENANT_HEADER, as the
        // subgraph reads it). The subgraph believes this header, so accept it only from
        // callers you trust (internal services on a private network); public clients use
        // verified-identity mode, where the subgraph ignores it.
        [identity.tenantHeader]: request.headers.get(identity.tenantHeader),
        // Verified-identity mode: the caller's bearer JWT, which the subgraph verifies.
        authorization: request.headers.get('authorization'),
        // W3C trace context, so the subgraph's spans join the caller's trace.
        traceparent: request.headers.get('traceparent'),
        // Proves to our subgraph that the request came through this gateway. Only `wfs`
        // receives it; a client cannot send it through, since only the headers above pass.
        ...(subgraphName === 'wfs' && { 'router-authorization': routerSecret }),
      }),
    },
    // Our subgraph may refresh a token, follow upstream pages and wait out a 429
    // within one request (15 s budget of its own).
    // Not for subscriptions: they are meant to stay open, and Hive's timeout would end
    // one (and reject, unhandled, after the subscription is over).
    upstreamTimeout: ({ subgraphName, executionRequest }) =>
      executionRequest?.operationType === 'subscription' ? 0 : subgraphName === 'wfs' ? WFS_TIMEOUT_MS : OTHER_TIMEOUT_MS,
    // The response cache (docs/caching.md, "Hive Gateway's response cache"): one entry per
    // company (the tenant header and the bearer token, hashed), for as long as the
    // subgraphs' `max-age` allows. Fail-closed: a request naming no company is not cached
    // at all (`session` returning null alone would share its entry with every caller), and
    // a subgraph answer without a positive `max-age` (our `no-store`) keeps the response
    // out (useSubgraphMaxAgeOnly). Answers with errors are not stored (Hive's default).
    // The key is the response cache's own recipe, built by answerTags so the tags each
    // answer carried are filed under it.
    responseCaching: {
      session: (request) => cacheSession(request, identity),
      enabled: (request) => cacheSession(request, identity) !== null,
      ttl: RESPONSE_CACHE_MAX_TTL_MS,
      buildResponseCacheKey: answerTags.key,
    },
    // The callback protocol's endpoint (`/callback/<id>`, where our subgraph POSTs check, next and complete).
    ...(env.SUBGRAPH_WFS_SUBSCRIPTIONS === 'callback' && { webhooks: true, pubsub: new MemPubSub() }),
    plugins: (ctx) => [
      useSubgraphMaxAgeOnly(),
      useAnswerTags(answerTags),
      // Our subgraph's invalidations (WFS_CACHE_INVALIDATION_URLS=http://<gateway>/invalidation,
      // the same WFS_CACHE_INVALIDATION_KEY on both): Apollo Router's format, so both gateways
      // share one contract. Without the key, no endpoint.
      ...(env.WFS_CACHE_INVALIDATION_KEY && ctx.cache ? [useCacheInvalidationEndpoint({ cache: ctx.cache, key: env.WFS_CACHE_INVALIDATION_KEY })] : []),
    ],
    // Clients use the operations they were built with; turn on only in development.
    disableIntrospection: { disableIf: () => env.NODE_ENV === 'production' },
    graphiql: env.NODE_ENV !== 'production',
  });
}

export const gatewayConfig = createGatewayConfig(process.env);

/**
 * How the gateway subscribes to our subgraph (docs/live.md, "Gateways"), by
 * SUBGRAPH_WFS_SUBSCRIPTIONS:
 *
 * - `ws` (default): graphql-ws at the subgraph's URL; the identity goes in the upgrade
 *   request's headers, one connection per caller's identity (the gateway keys its
 *   connections by these values); a WebSocket transport sends none of `propagateHeaders`.
 * - `sse`: GraphQL over SSE, POSTed (the HTTP executor would GET a subscription, with the
 *   document in the URL); the identity goes in the request's headers (the gateway's
 *   `propagateHeaders` does not reach a subscription's executor).
 * - `callback`: Apollo's HTTP callback protocol: the subscription is POSTed with a
 *   callback URL under GATEWAY_CALLBACK_URL (this gateway's public `/callback`, which
 *   the subgraph's WFS_SUBSCRIPTION_CALLBACK_ALLOW must name), and the subgraph POSTs its
 *   changes there. The identity goes in the subscription request's headers.
 */
function wfsSubscriptions(env: Env, routerSecret: string, tenantHeader: string) {
  const identity: Array<[string, string]> = [
    [tenantHeader, `{context.headers.${tenantHeader}}`],
    ['authorization', '{context.headers.authorization}'],
    ['router-authorization', routerSecret],
  ];
  const protocol = env.SUBGRAPH_WFS_SUBSCRIPTIONS ?? 'ws';
  if (protocol === 'ws') return { kind: 'ws', headers: identity };
  if (protocol === 'sse') return { kind: 'http', headers: identity, options: { method: 'POST' } };
  if (protocol !== 'callback') throw new Error(`SUBGRAPH_WFS_SUBSCRIPTIONS must be ws, sse or callback, got "${protocol}"`);
  const publicUrl = env.GATEWAY_CALLBACK_URL;
  if (!publicUrl) throw new Error("GATEWAY_CALLBACK_URL must be set with SUBGRAPH_WFS_SUBSCRIPTIONS=callback: this gateway's public /callback URL, which the subgraph POSTs to");
  // The subgraph checks at half this interval; the gateway ends a subscription silent for as long.
  return { kind: 'http-callback', headers: identity, options: { public_url: publicUrl, path: new URL(publicUrl).pathname, heartbeat_interval: 10_000 } };
}
