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
import { defineConfig } from '@graphql-hive/gateway';

type Env = Readonly<Record<string, string | undefined>>;

/** The subgraph timeout, below router.yaml's 20 s for `wfs`: our own 15 s request budget answers first. */
const WFS_TIMEOUT_MS = 20_000;
const OTHER_TIMEOUT_MS = 10_000;

export function createGatewayConfig(env: Env) {
  const routerSecret = env.WFS_ROUTER_SECRET;
  if (!routerSecret) throw new Error('WFS_ROUTER_SECRET must be set: the wfs subgraph answers only requests that carry it');
  return defineConfig({
    supergraph: env.SUPERGRAPH_PATH ?? './supergraph.graphql',
    // Where each subgraph runs here; the supergraph's routing URLs are for a laptop.
    transportEntries: {
      wfs: {
        ...(env.SUBGRAPH_WFS_URL && { location: env.SUBGRAPH_WFS_URL }),
        options: {
          // Live updates (`shiftChanges`, `locationChanges`): graphql-ws at the same path.
          // The identity goes in the upgrade request's headers, one connection per
          // caller's identity (the gateway keys its connections by these values); a
          // WebSocket transport sends none of `propagateHeaders` below. Clients subscribe
          // to the gateway over SSE or graphql-ws (the CLI serves it at its GraphQL path);
          // over graphql-ws `context.headers` are the upgrade request's headers with the
          // client's connectionParams merged in, so a browser sends
          // `connectionParams: { 'x-tenant-id': … }` (docs/frontend.md, "Live updates").
          subscriptions: {
            kind: 'ws',
            headers: [
              ['x-tenant-id', '{context.headers.x-tenant-id}'],
              ['authorization', '{context.headers.authorization}'],
              ['router-authorization', routerSecret],
            ],
          },
        },
      },
      ...(env.SUBGRAPH_PEOPLE_URL && { people: { location: env.SUBGRAPH_PEOPLE_URL } }),
    },
    propagateHeaders: {
      fromClientToSubgraphs: ({ request, subgraphName }) => ({
        // Trusted-header mode: the tenant the caller acts for. The subgraph believes this
        // header, so accept it only from callers you trust (internal services on a private
        // network); public clients use verified-identity mode, where the subgraph ignores it.
        'x-tenant-id': request.headers.get('x-tenant-id'),
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
    // Clients use the operations they were built with; turn on only in development.
    disableIntrospection: { disableIf: () => env.NODE_ENV === 'production' },
    graphiql: env.NODE_ENV !== 'production',
  });
}

export const gatewayConfig = createGatewayConfig(process.env);
