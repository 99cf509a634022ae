/**
 * Answers written and not yet read by their clients (WebSocket connections: liveSocket.ts;
 * SSE and multipart streams: liveHttp.ts) count against one bound of the replica, the
 * memory account's row for them (`socket.bufferedBytesPerReplica`). Past it, the holders
 * with the most unread are dropped first, until what the rest hold fits: one slow client
 * holding much goes before many holding little.
 */

/** Drops `holders` (each holding `unread` of `total`), the most first, until `total` is within `bound`; holders with nothing unread are kept. */
export function dropLargestUntilWithin<T>(holders: Iterable<T>, total: number, bound: number, unread: (holder: T) => number, drop: (holder: T) => void): void {
  if (total <= bound) return;
  let left = total;
  for (const holder of [...holders].sort((a, b) => unread(b) - unread(a))) {
    const held = unread(holder);
    if (left <= bound || held === 0) break;
    left -= held;
    drop(holder);
  }
}
