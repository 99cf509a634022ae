/**
 * The replica's memory account: what every bound a client can fill may hold, added up
 * and set against the heap the process runs with. Each bound alone is reasonable; only
 * their sum says whether a replica whose bounds are all filled at once stays up (a
 * third security review took one down with bounds that were each fine: 8 070 WebSocket
 * connections of 14 KB of headers, 16 bodies of 1 MiB of `{}`).
 *
 * A row is a bound's count times the most one unit of it holds: a socket with the most
 * header text Node reads, a WebSocket connection with a message half received, a
 * request in flight, a subscription with its queue of changes; the bounds kept in bytes
 * (bodies counted as parsed, queued messages, send buffers, subscription variables)
 * count as they are. Besides the rows, what the process holds whatever clients do
 * (`reserved`: its code and schema, the young generation, the entity indexes' budget
 * and the document stores) comes off the heap first, and a margin is kept for the
 * collector to work in. docs/limits.md, "The memory account", has the table.
 *
 * `fitToHeap` applies it at start: a configuration that fits is kept; one that does not
 * fit with every bound at its default (a heap smaller than the shipped 256 MiB) has its
 * counts scaled down together, said in the start-up log; one that does not fit with a
 * bound set is refused, naming the bounds and what to do.
 */
import { DEFAULT_LIMITS, withLimits, type LimitOverrides, type Limits } from '../config';

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * Most one unit holds, in bytes. Measured on the built server (docs/limits.md, "The
 * memory account", says how); each rounded up.
 */
export const UNIT_BYTES = {
  /** A socket of node:http with its parser and timers, native memory included (15 000 sockets that never finished their headers: about 130 MB RSS). */
  socket: 8 * KiB,
  /** Header text a socket may hold while its headers arrive: Node's `maxHeaderSize`, which the server sets (http/connectionBounds.ts, MAX_HEADER_BYTES). */
  headers: 16 * KiB,
  /** A WebSocket connection once acknowledged: ws, graphql-ws's context, the transport's and the gate's state, its identity (1 200 connections: 12 MiB). */
  liveConnection: 12 * KiB,
  /** A request in flight without its body: its IncomingMessage and ServerResponse, context, signal and timer, Apollo's request context. */
  request: 8 * KiB,
  /** An open subscription without its queue: its context, its place in the hub and its view, graphql-ws's iterator. */
  subscription: 4 * KiB,
  /** One change waiting for a subscriber: a reference in its queue (changes are shared by every subscriber that gets them). */
  queuedChange: 16,
} as const;

/** Of the heap limit, what the rows and the reserve may take together: the rest is room for the collector. */
export const USABLE_SHARE = 0.85;

/** What the process holds whatever clients do, besides the entity indexes' budget: code, schema, compiled operations, metrics, and the young generation (3 × --max-semi-space-size). */
export const BASELINE_BYTES = 48 * MiB;

/** One line of the account. */
export interface AccountRow {
  /** What the row counts. */
  readonly name: string;
  /** The bound(s) its count comes from, as `group.field`. */
  readonly bounds: readonly string[];
  readonly count: number;
  readonly unitBytes: number;
  readonly bytes: number;
}

export interface MemoryAccount {
  /** V8's heap size limit in force (`heap_size_limit`), in bytes. */
  readonly heapLimitBytes: number;
  /** What the process holds whatever clients do (BASELINE_BYTES, the entity indexes' budget, the document stores). */
  readonly reservedBytes: number;
  /** What clients may make the replica hold: USABLE_SHARE of the heap, less the reserve. */
  readonly budgetBytes: number;
  readonly rows: readonly AccountRow[];
  /** The rows added up: every bound filled at once. */
  readonly worstCaseBytes: number;
  readonly fits: boolean;
}

/** What is held outside the rows: the entity indexes' budget and the document stores, in bytes. */
export interface Reserve {
  /** WFS_ENTITY_INDEX_MAX_RECORDS times the bytes a record unit stands for (answers kept whole included). */
  readonly entityIndexBytes: number;
  /** The parsed-document store and the persisted-query cache together. */
  readonly documentBytes: number;
}

const row = (name: string, bounds: readonly string[], count: number, unitBytes: number): AccountRow => ({ name, bounds, count, unitBytes, bytes: count * unitBytes });

/** The rows of `limits`: every bound a client can fill, as bytes held. */
export function accountRows(limits: Limits): AccountRow[] {
  const { connection, request, socket, gate, live } = limits;
  const httpSocket = UNIT_BYTES.socket + UNIT_BYTES.headers;
  const liveSocket = UNIT_BYTES.socket + UNIT_BYTES.liveConnection + socket.messageBytes;
  // A socket is either; the worst mix has as many WebSocket connections as allowed.
  const live_ = Math.min(socket.connections, connection.maxConnections);
  return [
    row('HTTP sockets, headers arriving', ['connection.maxConnections', 'socket.connections'], connection.maxConnections - live_, httpSocket),
    row('WebSocket connections, a message half received', ['socket.connections', 'socket.messageBytes'], live_, liveSocket),
    row('requests in flight, without their bodies', ['request.inFlight'], request.inFlight, UNIT_BYTES.request),
    row('request bodies, counted as parsed', ['request.bufferedBodyBytes'], 1, request.bufferedBodyBytes),
    row('WebSocket messages received, not yet handled', ['socket.queuedBytesPerReplica'], 1, socket.queuedBytesPerReplica),
    row('WebSocket answers not yet read by their clients', ['socket.bufferedBytesPerReplica'], 1, socket.bufferedBytesPerReplica),
    row('subscriptions, each with a full queue of changes', ['live.perReplica', 'live.queuedChanges'], live.perReplica, UNIT_BYTES.subscription + UNIT_BYTES.queuedChange * live.queuedChanges),
    row("subscriptions' variables", ['gate.variableBytesPerReplica'], 1, gate.variableBytesPerReplica),
  ];
}

/** The account of `limits` against a heap of `heapLimitBytes`. */
export function memoryAccount(limits: Limits, heapLimitBytes: number, reserve: Reserve): MemoryAccount {
  const rows = accountRows(limits);
  const reservedBytes = BASELINE_BYTES + reserve.entityIndexBytes + reserve.documentBytes;
  const budgetBytes = Math.max(0, Math.floor(heapLimitBytes * USABLE_SHARE) - reservedBytes);
  const worstCaseBytes = rows.reduce((sum, one) => sum + one.bytes, 0);
  return { heapLimitBytes, reservedBytes, budgetBytes, rows, worstCaseBytes, fits: worstCaseBytes <= budgetBytes };
}

/** The bounds the account scales together when a heap is too small for the defaults (each a count or a byte total). */
const SCALED: ReadonlyArray<readonly [keyof Limits, string]> = [
  ['connection', 'maxConnections'],
  ['connection', 'connectionsPerAddress'],
  ['socket', 'connections'],
  ['socket', 'connectionsPerAddress'],
  ['request', 'inFlight'],
  ['request', 'bufferedBodyBytes'],
  ['socket', 'queuedBytesPerReplica'],
  ['socket', 'bufferedBytesPerReplica'],
  ['live', 'perReplica'],
  ['live', 'perCompany'],
  ['gate', 'variableBytesPerReplica'],
  ['gate', 'variableBytesPerCompany'],
];

/** The bounds of the rows that are not at their default (set by a `WFS_*` setting or by the embedder). */
function boundsSet(limits: Limits): string[] {
  const set = new Set<string>();
  for (const one of accountRows(limits)) {
    for (const name of one.bounds) {
      const [group, field] = name.split('.') as [keyof Limits, string];
      const value = (limits[group] as unknown as Record<string, number>)[field];
      const fallback = (DEFAULT_LIMITS[group] as unknown as Record<string, number>)[field];
      if (value !== fallback) set.add(name);
    }
  }
  return [...set];
}

/** What `fitToHeap` did. */
export type Fitting =
  | { readonly kind: 'fits'; readonly limits: Limits; readonly account: MemoryAccount }
  | { readonly kind: 'scaled'; readonly limits: Limits; readonly account: MemoryAccount; readonly factor: number; readonly before: MemoryAccount }
  | { readonly kind: 'refused'; readonly account: MemoryAccount; readonly boundsSet: readonly string[] };

/**
 * Keeps `limits` if their worst case fits the heap; scales the counts of SCALED down by
 * one factor if they are all at their defaults (a heap smaller than the shipped one);
 * refuses them if a bound of the account was set and they do not fit.
 */
export function fitToHeap(limits: Limits, heapLimitBytes: number, reserve: Reserve): Fitting {
  const account = memoryAccount(limits, heapLimitBytes, reserve);
  if (account.fits) return { kind: 'fits', limits, account };
  const set = boundsSet(limits);
  if (set.length > 0 || account.budgetBytes === 0) return { kind: 'refused', account, boundsSet: set };
  const factor = account.budgetBytes / account.worstCaseBytes;
  const overrides: Partial<Record<keyof Limits, Record<string, number>>> = {};
  for (const [group, field] of SCALED) {
    const value = (limits[group] as unknown as Record<string, number>)[field]!;
    (overrides[group] ??= {})[field] = Math.max(1, Math.floor(value * factor));
  }
  const fitted = withLimits(limits, overrides as LimitOverrides);
  return { kind: 'scaled', limits: fitted, account: memoryAccount(fitted, heapLimitBytes, reserve), factor, before: account };
}

/** The account in a line's fields, in MiB (the start-up log). */
export function accountSummary(account: MemoryAccount): { heapLimitMiB: number; reservedMiB: number; budgetMiB: number; worstCaseMiB: number } {
  const mib = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;
  return { heapLimitMiB: mib(account.heapLimitBytes), reservedMiB: mib(account.reservedBytes), budgetMiB: mib(account.budgetBytes), worstCaseMiB: mib(account.worstCaseBytes) };
}

