/**
 * The subscribe gate's options (subscribeGate.ts): its bounds (their defaults and
 * reasons are config/limits.ts's DEFAULT_LIMITS.gate; refusals past them are in refusals.ts),
 * what the transport tells it of a connection, and the hooks it gives graphql-ws.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { GraphQLFormattedError, GraphQLSchema } from 'graphql';
import type { ServerOptions } from 'graphql-ws';
import type { GateLimits } from '../../config';
import type { LiveHub } from '../../live/hub';
import type { ContextServices } from '../data/context';
import type { QueryLimits } from './limits';
import type { DemoDefault } from './identity';
import type { RefusalReason } from './refusals';

/** The gate's bounds: `limits.gate` of the configuration (config/limits.ts says each one's default and reason). */
export type SubscribeGateLimits = GateLimits;

/** The subgraph protocols a subscription reaches a replica by (http/liveSocket.ts, http/liveHttp.ts, http/liveCallback.ts): the `transport` label. */
export type LiveTransport = 'ws' | 'sse' | 'multipart' | 'callback';

/** What the transport tells the gate of a connection (graphql-ws's `extra`). */
export interface GateExtra {
  /** The upgrade request's headers, given once (the transport lets go of them then). */
  takeHeaders(): IncomingHttpHeaders;
  /** Closes the connection (a client past the refusal bound). */
  close(code: number, reason: string): void;
  /** Its upgrade carried the router secret (the transport's verdict): a gateway's connection, for its callers. */
  readonly gateway: boolean;
  /** The query text and variables of subscribe `id`, as sent, given once. */
  takeSubscribe(id: string): { readonly query: unknown; readonly variables: unknown } | undefined;
  /** The protocol the connection speaks (default `ws`). */
  readonly transport?: LiveTransport;
}

export interface SubscribeGateOptions {
  /** The subgraph schema, asked for at the first subscription; one not instrumented by Apollo Server's plugins. */
  readonly schema: () => GraphQLSchema;
  readonly services: ContextServices;
  readonly hub: LiveHub;
  readonly queryLimits: QueryLimits;
  /** The upstream time one change's resolution may use, in ms (a query's budget). */
  readonly budgetMs: number;
  /** Apollo's error formatter (graphql/errors.ts): upstream errors to their codes and client sentences. */
  readonly formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  /** Counts a refusal, by reason (refusals.ts): the Observer port's `refused`. */
  readonly refused: (reason: RefusalReason, transport?: LiveTransport) => void;
  /** Its bounds (`limits.gate` of the configuration). */
  readonly limits: SubscribeGateLimits;
  /** Told each subscription accepted (+1) or ended (-1), by its transport: `wfs_live_transport_subscriptions`. */
  readonly opened?: (transport: LiveTransport, delta: number) => void;
  /** Demo mode: the tenant a connection that names none gets, said in `connection_ack` and each `next` (`demoTenant`). */
  readonly demo?: DemoDefault | undefined;
  /** The trusted tenant header (WFS_TENANT_HEADER): with `authorization` and `router-authorization`, the only headers identity reads. */
  readonly tenantHeader: string;
}

/** The graphql-ws hooks of admission, the gate's timer to stop, and what graphql-ws is handed of a `connection_init` payload (`connectionParams`). */
export type SubscribeGate = Required<Pick<ServerOptions<Record<string, unknown> | undefined, GateExtra>, 'onConnect' | 'onSubscribe' | 'onNext' | 'onComplete' | 'onClose' | 'subscribe'>> & {
  close(): void;
  connectionParams(payload: unknown): Record<string, unknown> | undefined;
};
