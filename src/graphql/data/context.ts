/**
 * The typed context every resolver receives (`GraphQLContext`), and `createContext`,
 * which builds it for one request from the process-wide services: the request's
 * tenant, worked out on first use, and through it the tenant's data (tenantData.ts);
 * the errors that travel with the response; the request's abort signal.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { GraphQLError } from 'graphql';
import type { CacheTicket } from '../../cache/decision';
import type { LiveHub } from '../../live/hub';
import type { IdentityResolver } from '../admission/identity';
import { NO_OBSERVER, type RequestRecord } from '../../upstream/observer';
import { createTenantData, type DataServices, type TenantData } from './tenantData';

/** The typed context every resolver receives. */
export interface GraphQLContext {
  /** The request's tenant and its loaders; rejects with UNAUTHENTICATED or FORBIDDEN. */
  tenant(): Promise<TenantData>;
  /** The tenant once `tenant()` has resolved (undefined before): lets hot resolvers skip a promise. */
  knownTenant(): TenantData | undefined;
  /** Errors that do not fail a field (a malformed item skipped in a page); sent with the response. */
  readonly itemErrors: GraphQLError[];
  /** Aborts when the request is over: its client went away, or its deadline passed. */
  readonly signal: AbortSignal;
  /** What is recorded of this request for its logs and metrics (absent when a test builds a context alone). */
  readonly request?: RequestRecord;
  /** The request's side of the cache (cache/policy.ts): the store's offer and the decision made for its answer. Absent in a subscription. */
  readonly cache?: CacheTicket;
  /** The response is out: the tenant's per-request data lets go of what it read (tenantData.ts, `release`). */
  release(): void;
  /** Live updates: present in a graphql-ws subscription's context only (subscriptionContext.ts). */
  readonly live?: LiveContext;
}

/** What a subscription's resolvers need beyond a request's context. */
export interface LiveContext {
  /** The replica's pollers and subscriptions. */
  readonly hub: LiveHub;
  /**
   * A new change is about to be resolved: the context's per-request data (page cache,
   * loaders, deadline) starts afresh for it, so a long-lived subscription holds none
   * of it between changes, and each change is resolved like a request of its own.
   */
  renew(): void;
  /** Aborts, its reason the error, when the subscription is ended from outside (an identity that lapsed): the hub then ends its events with that error. */
  readonly ended: AbortSignal;
  /** The subgraph protocol the subscription came by (a refusal's `transport` label); graphql-ws unless said. */
  readonly transport?: string;
}

/** Process-wide services the per-request context is built from. */
export interface ContextServices extends DataServices {
  /** Works out which tenant a request acts for (admission/identity.ts builds it); rejects with UNAUTHENTICATED or FORBIDDEN. */
  readonly identify: IdentityResolver;
}

/**
 * The tenant is worked out lazily, on first use: the router's `_service` query and
 * introspection carry no tenant and must still be answered.
 */
export function createContext(services: ContextServices, headers: IncomingHttpHeaders, signal: AbortSignal, request?: RequestRecord): GraphQLContext {
  const itemErrors: GraphQLError[] = [];
  let tenant: Promise<TenantData> | undefined;
  let known: TenantData | undefined;
  return {
    itemErrors,
    signal,
    ...(request && { request }),
    cache: { keepAs: undefined, decision: undefined },
    tenant() {
      tenant ??= services.identify(headers).then((tenantId) => {
        (services.observer ?? NO_OBSERVER).tenantIdentified(tenantId);
        known = createTenantData(services, tenantId, signal, itemErrors);
        return known;
      });
      return tenant;
    },
    knownTenant: () => known,
    release: () => known?.release(),
  };
}
