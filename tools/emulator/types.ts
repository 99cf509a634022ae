import type { ListName } from '../../src/upstream/resources';

/** A location record as the emulator serves it; extra fields prove clients ignore them. */
export interface EmulatorLocation {
  object: 'location';
  id: string;
  name: string;
  [extra: string]: unknown;
}

/** A shift record: `start`/`end` ISO 8601 with a UTC offset, `location` a location id, `user` null for an open shift. */
export interface EmulatorShift {
  object: 'shift';
  id: string;
  location: string;
  start: string;
  end: string;
  user: string | null;
  [extra: string]: unknown;
}

/**
 * A record of any other registered list as the emulator serves it (`{ object: 'timesheet',
 * id: 'ts_1', … }`): the upstream's JSON, which the resource's mapper reads.
 */
export interface EmulatorRecord {
  object: string;
  id: string;
  [field: string]: unknown;
}

// A resource registered without its literal name (`defineResource<R, F, 'timesheets'>`)
// would widen ListName to `string`; its seed data then goes untyped instead of every tenant.
type OtherListName = string extends ListName ? never : Exclude<ListName, 'locations' | 'shifts'>;

/**
 * The records of every other registered list, by list name (`timesheets: [...]`): the
 * emulator serves each list from the field named after it, so a resource added to the
 * registry needs only seed data here, typed as soon as it is registered.
 */
export type OtherLists = { [List in OtherListName]?: EmulatorRecord[] };

/** One company: its credentials, granted scopes, shard and data. */
export interface EmulatorTenant extends OtherLists {
  tenantId: string;
  name: string;
  clientId: string;
  clientSecret: string;
  /** e.g. ['locations.read', 'shifts.read'] */
  grantedScopes: string[];
  /** Index into the emulator's shards. */
  shard: number;
  locations: EmulatorLocation[];
  shifts: EmulatorShift[];
}

/** How `next`/`previous` are written: a full URL, a path with query, or the bare cursor. */
export type PageReferenceFormat = 'absolute' | 'relative' | 'token';

/** Options of startEmulator; every field has a default. */
export interface EmulatorOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0 (ephemeral). */
  authPort?: number;
  /** One port per shard; the length is the shard count. Default [0, 0]. */
  shardPorts?: number[];
  /** Default '/auth': authUrl is http://HOST:PORT/auth. */
  authPathPrefix?: string;
  /** Default demoTenants(). The emulator works on copies. */
  tenants?: EmulatorTenant[];
  /** Default 'absolute'. */
  pageReferenceFormat?: PageReferenceFormat;
  /** Default 900. */
  tokenLifetimeSeconds?: number;
  /** Default 0; added to every response. */
  latencyMs?: number;
  /** Default 100; a larger page_size is clamped. */
  maxPageSize?: number;
  /** Default 20, used when page_size is absent. */
  defaultPageSize?: number;
  /** Clock in epoch milliseconds for token issue and expiry (tests move it forward). Default Date.now. */
  now?: () => number;
}

/** A queued fault: replaces the normal response of the next matching request(s). */
export interface FaultSpec {
  /** `token`, or a list name (`locations`, `shifts`, or any other served list). */
  endpoint: 'token' | ListName | (string & {});
  /** e.g. 500, 429, 401, 403, 503; default 500. */
  status?: number;
  /** e.g. { 'retry-after': '1' } */
  headers?: Record<string, string>;
  /** Raw body to send (e.g. invalid JSON, or a hostile envelope). */
  body?: string;
  /** Accept the request and never answer (until close). */
  hang?: boolean;
  /** How many requests it affects; default 1. */
  times?: number;
  /** Only that tenant's requests (default any). */
  tenantId?: string;
}

/** What the emulator saw; tests and benchmarks assert on these. */
export interface EmulatorCounters {
  /** Every POST to the token endpoint. */
  tokenRequests: number;
  tokenRequestsByTenant: Record<string, number>;
  /** Calls per list, every served list counted from 0. */
  listRequests: ListCounts;
  listRequestsByTenant: Record<string, ListCounts>;
  /** Every request that reached shard i. */
  requestsByShard: number[];
  /** 401s sent by shards (injected ones included). */
  unauthorized: number;
  /** Raw query strings of the last 50 list calls. */
  lastListQueries: string[];
}

/** A count per served list (every list of the registry), by name. */
export type ListCounts = { [L in ListName]: number } & Record<string, number>;

/** Rewrites a list envelope before it is sent (hostile-upstream tests). */
export type EnvelopeRewriter = (
  envelope: Record<string, unknown>,
  ctx: { tenantId: string; list: string },
) => Record<string, unknown>;

/** A running emulator: one auth server and one server per shard. */
export interface Emulator {
  /** With the path prefix, no trailing slash. */
  readonly authUrl: string;
  /** `${authUrl}/identity/o/api/token` */
  readonly tokenUrl: string;
  /** Origins, e.g. http://127.0.0.1:PORT (no trailing slash). */
  readonly shardUrls: string[];
  readonly tenants: readonly EmulatorTenant[];
  counters: EmulatorCounters;
  resetCounters(): void;
  configure(patch: Partial<Pick<EmulatorOptions, 'pageReferenceFormat' | 'tokenLifetimeSeconds' | 'latencyMs'>>): void;
  injectFault(fault: FaultSpec): void;
  clearFaults(): void;
  /** Tokens carrying the old api_base are then refused with 401. */
  moveTenant(tenantId: string, shard: number): void;
  /** Every token issued so far (for that tenant) is refused with 401. */
  revokeTokens(tenantId?: string): void;
  /** Rewrites each list envelope before it is sent: for hostile-upstream tests (e.g. a `next` on another origin). */
  setEnvelopeRewriter(fn: EnvelopeRewriter | undefined): void;
  /** Closes all servers, ends hanging requests, destroys keep-alive sockets. */
  close(): Promise<void>;
}
