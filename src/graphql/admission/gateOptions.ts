/**
 * The subscribe gate's options (subscribeGate.ts): its bounds and their defaults, each
 * with its reason (refusals past them are in refusals.ts), what the transport tells it
 * of a connection, and the hooks it gives graphql-ws.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { GraphQLFormattedError, GraphQLSchema } from 'graphql';
import type { ServerOptions } from 'graphql-ws';
import type { LiveHub } from '../../live/hub';
import type { ContextServices } from '../data/context';
import type { QueryLimits } from './limits';
import type { RefusalReason } from './refusals';

export interface SubscribeGateLimits {
  /** Subscriptions open (or being set up) on one connection; past it a subscribe gets an error. */
  readonly subscriptionsPerConnection: number;
  /** Refused subscribes a connection may send; past it, it is closed (1008): a client that keeps asking past a bound is not a screen. */
  readonly refusalsPerConnection: number;
  /** New subscriptions one company may open on a replica within `companySubscribeBurst / companySubscribesPerSecond` seconds; past it a subscribe is refused (SERVICE_UNAVAILABLE). */
  readonly companySubscribeBurst: number;
  readonly companySubscribesPerSecond: number;
  /** How often the identity of a connection with open subscriptions is checked again, in ms (a JWT past `exp`, a key withdrawn). */
  readonly identityRecheckMs: number;
  /**
   * Bytes of variables (the coerced values its operations declare, measured as their
   * JSON text) the open subscriptions of one connection, of one company on the replica,
   * and of the whole replica may keep; a subscribe past one is refused (BAD_USER_INPUT).
   */
  readonly variableBytesPerConnection: number;
  readonly variableBytesPerCompany: number;
  readonly variableBytesPerReplica: number;
}

export const DEFAULT_SUBSCRIBE_GATE_LIMITS: SubscribeGateLimits = Object.freeze({
  // A gateway multiplexes a company's subscriptions over one connection (Hive Gateway
  // keeps one per caller identity), so this is well above one screen's few.
  subscriptionsPerConnection: 1_000,
  refusalsPerConnection: 100,
  companySubscribeBurst: 1_000,
  companySubscribesPerSecond: 100,
  identityRecheckMs: 30_000,
  // A subscription's variables are a filter (an id, two date-times: about 150 bytes),
  // so these leave 1 KiB to each of a connection's 1 000 subscriptions, 800 bytes to
  // each of a company's 5 000 and of the replica's 20 000: 16 MiB of the 256 MiB heap
  // at most, whatever clients send.
  variableBytesPerConnection: 1024 * 1024,
  variableBytesPerCompany: 4 * 1024 * 1024,
  variableBytesPerReplica: 16 * 1024 * 1024,
});

/** What the transport tells the gate of a connection (graphql-ws's `extra`). */
export interface GateExtra {
  /** The upgrade request's headers. */
  readonly headers: IncomingHttpHeaders;
  /** Closes the connection (a client past the refusal bound). */
  close(code: number, reason: string): void;
  /** Its upgrade carried the router secret (the transport's verdict): a gateway's connection, for its callers. */
  readonly gateway: boolean;
  /** The query text and variables of subscribe `id`, as sent, given once. */
  takeSubscribe(id: string): { readonly query: unknown; readonly variables: unknown } | undefined;
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
  readonly refused: (reason: RefusalReason) => void;
  readonly limits?: Partial<SubscribeGateLimits>;
  /** Demo mode: the tenant a connection that names none gets, said in `connection_ack` and each `next` (`demoTenant`). */
  readonly demo?: { readonly tenantHeader: string; readonly defaultTenant: string };
  /** The trusted tenant header (WFS_TENANT_HEADER): with `authorization` and `router-authorization`, the only headers identity reads. */
  readonly tenantHeader: string;
}

/** The graphql-ws hooks of admission, the gate's timer to stop, and what graphql-ws is handed of a `connection_init` payload (`connectionParams`). */
export type SubscribeGate = Required<Pick<ServerOptions<Record<string, unknown> | undefined, GateExtra>, 'onConnect' | 'onSubscribe' | 'onNext' | 'onComplete' | 'onClose' | 'subscribe'>> & {
  close(): void;
  connectionParams(payload: unknown): Record<string, unknown> | undefined;
};
