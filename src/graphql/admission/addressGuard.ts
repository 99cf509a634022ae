/**
 * The WebSocket side's bound per client address (clientAddress.ts, an
 * IPv6 address by its /64): a hostile client that is closed for
 * what it sends (malformed messages, a missing or forged `connection_init`, a flood of
 * subscribes) and connects again at once would make the replica pay a handshake, an
 * identity check and its refusals over and over. Each such connection earns strikes
 * against its address; past `strikes` within `windowMs`, that address's upgrade
 * requests are refused before the WebSocket handshake, with 429 and Retry-After, for
 * `blockMs`. Connections that behave cost nothing here, so a gateway (many users
 * on one address) or a thousand screens behind one NAT open as many as they need.
 *
 * A refused upgrade is answered after a pause (at most `refusalDelayMs`, and never
 * past the block), so a client that ignores Retry-After and asks again at once waits
 * anyway instead of looping through refusals as fast as the replica can write them;
 * at most `heldRefusals` sockets wait so, any more are closed at once.
 *
 * The counting is rate-limiter-flexible's `RateLimiterMemory` (fixed windows per key,
 * a block once the points are spent, keys expiring on their own).
 */
import type { Duplex } from 'node:stream';
import { RateLimiterMemory } from 'rate-limiter-flexible';

export interface AddressGuardOptions {
  /** Strikes one address may earn within `windowMs` (liveSocket.ts weighs them). */
  readonly strikes: number;
  readonly windowMs: number;
  /** How long an address that went past `strikes` has its upgrades refused. */
  readonly blockMs: number;
  /** The longest pause before a refusal is written. */
  readonly refusalDelayMs: number;
  /** Refused sockets waiting for their answer at once, all addresses together. */
  readonly heldRefusals: number;
}

export interface AddressGuard {
  /** Milliseconds until `address` may open connections again (0: it may now). */
  blockedFor(address: string): Promise<number>;
  /** A connection from `address` misbehaved (closed for what it sent, or ended before its `connection_init` was accepted): `points` strikes. */
  strike(address: string, points: number): void;
  /** Answers a refused upgrade with 429 and Retry-After, after the pause. */
  refuse(socket: Duplex, blockedMs: number): void;
  close(): void;
}

export function createAddressGuard(options: AddressGuardOptions): AddressGuard {
  // rate-limiter-flexible counts in seconds (fractions too).
  const limiter = new RateLimiterMemory({ points: options.strikes, duration: options.windowMs / 1000, blockDuration: options.blockMs / 1000 });
  const held = new Set<{ socket: Duplex; timer: NodeJS.Timeout }>();

  return {
    async blockedFor(address) {
      const counted = await limiter.get(address);
      return counted && counted.consumedPoints > options.strikes && counted.msBeforeNext > 0 ? counted.msBeforeNext : 0;
    },
    strike(address, points) {
      // Past the points it rejects (and blocks the key): that rejection is the point.
      limiter.consume(address, points).catch(() => undefined);
    },
    refuse(socket, blockedMs) {
      const retryAfter = Math.max(1, Math.ceil(blockedMs / 1000));
      const answer = () => {
        if (socket.destroyed) return;
        socket.end(`HTTP/1.1 429 Too Many Requests\r\nconnection: close\r\ncontent-length: 0\r\nretry-after: ${retryAfter}\r\n\r\n`);
        socket.destroy();
      };
      socket.on('error', () => undefined);
      if (held.size >= options.heldRefusals) return answer();
      const entry = { socket, timer: setTimeout(() => (held.delete(entry), answer()), Math.min(options.refusalDelayMs, blockedMs)) };
      entry.timer.unref();
      held.add(entry);
      socket.once('close', () => {
        clearTimeout(entry.timer);
        held.delete(entry);
      });
    },
    close() {
      for (const entry of held) {
        clearTimeout(entry.timer);
        entry.socket.destroy();
      }
      held.clear();
    },
  };
}
