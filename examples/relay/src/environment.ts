import type { Client as LiveClient } from 'graphql-ws';
import { Environment, Network, Observable, RecordSource, Store, type FetchFunction, type GraphQLResponse, type SubscribeFunction } from 'relay-runtime';

/**
 * One Relay environment per tenant (company). Cursors and node ids are only valid for
 * the company that issued them, and the store caches records by node id; one store
 * shared by two companies would serve one company's cached records to the other.
 * When the user switches company, create a new environment (and remount under a
 * new `RelayEnvironmentProvider`), never reuse the old store.
 */
export interface TenantEnvironmentOptions {
  /** The GraphQL endpoint: the router's, or this subgraph's for a single-subgraph setup. */
  url: string;
  /**
   * Headers that name the company: in trusted-header mode `x-tenant-id` (the router
   * propagates it); in verified-identity mode `authorization: Bearer <JWT>`.
   */
  headers: Record<string, string>;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /**
   * For subscriptions (docs/live.md): a graphql-ws client of the same company, e.g.
   * `createClient({ url: 'wss://…/graphql', connectionParams })`, whose identity goes in
   * `connectionParams`: `{ headers: { 'x-tenant-id': … } }` for this subgraph,
   * `{ 'x-tenant-id': … }` for Hive Gateway (which reads connectionParams as headers).
   */
  live?: LiveClient;
}

/**
 * Relay keys every record by the value `getDataID` returns, across types. Our
 * `Location.id` and `Shift.id` are upstream ids that may collide (location `17`,
 * shift `17`), so the store keys Node records by `nodeId`, which is unique across
 * types (relay.config.json: `nodeInterfaceIdField: "nodeId"`). Other records get
 * Relay's client ids (the path from their parent); that includes the subscriptions'
 * `ShiftChange` and `LocationChange`, whose `nodeId` names the changed record: keyed
 * by it, a change would be merged into the very record it carries.
 */
export function getDataID(fieldValue: { [key: string]: unknown }, typeName: string): unknown {
  return typeName.endsWith('Change') ? undefined : fieldValue['nodeId'];
}

/**
 * What graphql-ws hands a sink's `error` as an `Error` for Relay: a closed socket (a
 * refused identity is `4403` with the reason) by its code and reason, GraphQL errors by
 * their messages.
 */
export function liveError(error: unknown): Error {
  if (error instanceof Error) return error;
  const closed = error as { code?: unknown; reason?: unknown } | null;
  if (typeof closed?.code === 'number') return new Error(`live updates closed: ${closed.code} ${String(closed.reason ?? '')}`.trim());
  if (Array.isArray(error)) return new Error(error.map((item: { message?: unknown }) => String(item?.message)).join('; '));
  return new Error(String(error));
}

export function createTenantEnvironment(options: TenantEnvironmentOptions): Environment {
  const doFetch = options.fetch ?? fetch;
  const fetchFn: FetchFunction = async (request, variables) => {
    // POST, as the server's CSRF prevention asks of a client that sends no special header.
    const response = await doFetch(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...options.headers },
      body: JSON.stringify({ query: request.text, operationName: request.name, variables }),
    });
    return (await response.json()) as GraphQLResponse;
  };
  const live = options.live;
  const subscribeFn: SubscribeFunction | undefined = live
    ? (request, variables) =>
        Observable.create<GraphQLResponse>((sink) =>
          live.subscribe<GraphQLResponse>({ query: request.text ?? '', operationName: request.name, variables }, {
            next: (result) => sink.next(result as GraphQLResponse),
            error: (error) => sink.error(liveError(error)),
            complete: () => sink.complete(),
          }),
        )
    : undefined;
  return new Environment({
    network: Network.create(fetchFn, subscribeFn),
    store: new Store(new RecordSource()),
    getDataID,
  });
}
