import type { ResourceSet } from '../../src/upstream/resources';
import type { FaultQueue } from './faults';
import type { Timers } from './http';
import type { TokenAuthority } from './tokens';
import type { EmulatorCounters, EmulatorTenant, EnvelopeRewriter, ListCounts, PageReferenceFormat } from './types';

/** The settings configure() may change while the emulator runs. */
export interface LiveSettings {
  pageReferenceFormat: PageReferenceFormat;
  tokenLifetimeSeconds: number;
  latencyMs: number;
  readonly maxPageSize: number;
  readonly defaultPageSize: number;
}

/** Everything the request handlers share. */
export interface EmulatorState {
  readonly settings: LiveSettings;
  readonly tenants: EmulatorTenant[];
  readonly tenantsById: ReadonlyMap<string, EmulatorTenant>;
  readonly tenantsByClientId: ReadonlyMap<string, EmulatorTenant>;
  /** The lists served: the registry's. */
  readonly resources: ResourceSet;
  /** Filled in once the shard servers listen. */
  shardOrigins: string[];
  readonly counters: EmulatorCounters;
  readonly faults: FaultQueue;
  readonly tokens: TokenAuthority;
  readonly timers: Timers;
  /** Signs page cursors, so a cursor the emulator did not issue is refused. */
  readonly cursorKey: Buffer;
  rewriter: EnvelopeRewriter | undefined;
}

/** How many list queries `lastListQueries` keeps. */
export const LAST_QUERIES_KEPT = 50;

/** A zero count for every served list. */
export function zeroCounts(resources: ResourceSet): ListCounts {
  return Object.fromEntries(resources.all().map((resource) => [resource.name, 0])) as ListCounts;
}

/** All-zero counters for `shardCount` shards. */
export function freshCounters(shardCount: number, resources: ResourceSet): EmulatorCounters {
  return {
    tokenRequests: 0,
    tokenRequestsByTenant: {},
    listRequests: zeroCounts(resources),
    listRequestsByTenant: {},
    requestsByShard: Array.from({ length: shardCount }, () => 0),
    unauthorized: 0,
    lastListQueries: [],
  };
}

const SETTINGS_RULES = {
  pageReferenceFormat: (v: unknown) => v === 'absolute' || v === 'relative' || v === 'token',
  tokenLifetimeSeconds: (v: unknown) => Number.isInteger(v) && (v as number) > 0,
  latencyMs: (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0,
} as const;

/** Throws a RangeError naming the first invalid setting in `patch`. */
export function validateSettings(patch: Partial<Record<keyof typeof SETTINGS_RULES, unknown>>): void {
  for (const [name, valid] of Object.entries(SETTINGS_RULES)) {
    const value = patch[name as keyof typeof SETTINGS_RULES];
    if (value !== undefined && !valid(value)) throw new RangeError(`emulator: invalid ${name}: ${String(value)}`);
  }
}
