/** The bounds of the WebSocket transport (liveSocket.ts), with their defaults. */
import { NUMERIC_SETTINGS } from '../config';

/** Limits of the WebSocket transport; every field has a default. */
export interface LiveSocketLimits {
  /** Open WebSocket connections on the replica; past it an upgrade is answered 503. */
  readonly connections: number;
  /**
   * Open connections from one client address (an IPv6 address by its /64; the router
   * secret exempt, and with a secret set every accepted upgrade carries it); past it
   * an upgrade is answered 429 (`WFS_LIVE_CONNECTIONS_PER_ADDRESS`).
   */
  readonly connectionsPerAddress: number;
  /** The largest message a client may send, in bytes (ws closes the connection with 1009 past it). */
  readonly messageBytes: number;
  /** How long a connection may wait before its `connection_init`, in ms (then closed with 4408). */
  readonly connectionInitMs: number;
  /** Ping every this many ms; a connection that does not answer with a pong within as long again is terminated. */
  readonly keepAliveMs: number;
  /** Bytes a connection may have waiting to be sent (a client that does not read); past it, it is dropped. */
  readonly bufferedBytes: number;
  /** Messages a connection may send within `messageBurst / messagesPerSecond` seconds; past it, it is closed (1008). */
  readonly messageBurst: number;
  readonly messagesPerSecond: number;
  /**
   * Strikes one client address may earn within `addressWindowMs`: a connection
   * closed for a protocol violation or past a message or refusal bound earns 5, one
   * that ended before its `connection_init` was accepted (a refused identity, none in
   * time, a client that gave up) earns 1. Past it, upgrades from that address are
   * refused (429, Retry-After) for `addressBlockMs` (milliseconds, so tests see a block end in
   * a fraction of a second; WFS_LIVE_ADDRESS_BLOCK_SECONDS in production). An upgrade carrying the
   * router secret is not counted (the router has many users on one address, and
   * limits them itself).
   */
  readonly addressStrikes: number;
  readonly addressWindowMs: number;
  readonly addressBlockMs: number;
  /** A refused upgrade is answered after this pause (a client that ignores Retry-After waits anyway), at most `heldRefusals` at once. */
  readonly refusalDelayMs: number;
  readonly heldRefusals: number;
}

export const DEFAULT_LIVE_SOCKET_LIMITS: LiveSocketLimits = Object.freeze({
  connections: 20_000,
  // A fortieth of the replica's: a NAT'd office's screens fit, and it takes 40 addresses
  // (or /64s) acting together to fill a replica, not one /64 or 20 IPv4 addresses.
  connectionsPerAddress: NUMERIC_SETTINGS.WFS_LIVE_CONNECTIONS_PER_ADDRESS.default,
  messageBytes: 256 * 1024,
  connectionInitMs: 3_000,
  keepAliveMs: 12_000,
  bufferedBytes: 1024 * 1024,
  messageBurst: 2_000,
  messagesPerSecond: 200,
  addressStrikes: NUMERIC_SETTINGS.WFS_LIVE_ADDRESS_STRIKES.default,
  addressWindowMs: 10_000,
  addressBlockMs: NUMERIC_SETTINGS.WFS_LIVE_ADDRESS_BLOCK_SECONDS.default * 1000,
  refusalDelayMs: 1_000,
  heldRefusals: 1_000,
});

/** The longest subscription id accepted (graphql-ws's own are 36-character UUIDs); a longer one closes the connection (4400). */
export const MAX_SUBSCRIPTION_ID_CHARS = 128;
