import { Redis, type RedisOptions } from 'ioredis';

/*
 * The one place a replica builds its ioredis connections (WFS_REDIS_URL), used by the
 * shared token store (token/redisTokenStore.ts) and the live coordinator
 * (live/redisCoordinator.ts): two connections per replica, built once by the wiring.
 *
 *   commands    every command of both: token records and locks, poll leases, PUBLISH
 *   subscriber  SUBSCRIBE for live updates, opened on first use
 *
 * Why the subscriber is a connection of its own: under RESP2 a connection that has
 * subscribed accepts only (P|S)SUBSCRIBE, UNSUBSCRIBE, PING and QUIT, so the token
 * store's GET/SET would fail on it. ioredis speaks RESP3 (where one connection could
 * do both) only when the server answers HELLO 3, and falls back to RESP2 against a
 * server or proxy that does not (Redis before 6, some managed proxies). It also
 * queues differently: commands fail at once while Redis is down (the callers then
 * work alone), while a subscription must wait and be made again on reconnect.
 */

/** How long a closing connection may take to flush before it is cut. */
const DISCONNECT_TIMEOUT_MS = 200;

/**
 * Tuned for the request path: a dead Redis must fail a command at once rather than
 * hold a GraphQL request or a poll (the callers then degrade to this replica alone),
 * while the client keeps reconnecting in the background.
 */
const COMMAND_OPTIONS: RedisOptions = {
  lazyConnect: false,
  // Disconnected: reject commands immediately instead of queueing them until Redis
  // is back. This includes the few milliseconds before the first connection is
  // ready: a token needed then is fetched by this replica alone.
  enableOfflineQueue: false,
  // A command already sent when the connection drops is retried at most twice.
  maxRetriesPerRequest: 2,
  // A connected but stuck Redis (failover, a full machine) costs a request 1 s at most.
  commandTimeout: 1_000,
  // An unreachable host (packets dropped, not refused) is given up on after 2 s.
  connectTimeout: 2_000,
  // Keep reconnecting for as long as the process lives, at most every 2 s.
  retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  // Nothing pending is worth waiting for when it disconnects.
  disconnectTimeout: DISCONNECT_TIMEOUT_MS,
};

/** The subscriber queues while offline and subscribes again by itself on reconnect; SUBSCRIBE has no reply to time out. */
const SUBSCRIBER_OPTIONS: RedisOptions = { ...COMMAND_OPTIONS, enableOfflineQueue: true, commandTimeout: undefined };

export interface RedisConnections {
  /** Commands of the token store and the live coordinator. */
  readonly commands: Redis;
  /** The SUBSCRIBE connection, opened on first call. */
  subscriber(): Redis;
  /** Closes both and stops reconnecting; never throws. */
  close(): Promise<void>;
}

/**
 * The replica's connections to `url`. Each swallows its `error` events (without a
 * listener ioredis prints every reconnect failure to the console): the users listen
 * for what they report, once per outage.
 */
export function connectRedis(url: string): RedisConnections {
  const open = (options: RedisOptions) => {
    const connection = new Redis(url, options);
    connection.on('error', () => undefined);
    return connection;
  };
  const commands = open(COMMAND_OPTIONS);
  let subscriber: Redis | undefined;
  return {
    commands,
    subscriber: () => (subscriber ??= open(SUBSCRIBER_OPTIONS)),
    async close() {
      await Promise.all([commands, subscriber].map((connection) => (connection ? quit(connection) : undefined)));
    },
  };
}

async function quit(connection: Redis): Promise<void> {
  if (connection.status === 'end') return;
  if (connection.status === 'ready') {
    try {
      await connection.quit();
      return;
    } catch {
      // fall through to a hard disconnect
    }
  }
  connection.disconnect();
  // ioredis destroys a stream that does not close within disconnectTimeout, on a
  // timer that keeps the process alive: wait it out so nothing is left behind.
  await new Promise((resolve) => setTimeout(resolve, DISCONNECT_TIMEOUT_MS));
}
