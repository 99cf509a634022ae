/**
 * The WebSocket transport's refusals (http/liveSocket.ts asks, this decides and
 * answers): an upgrade is admitted or refused before any handshake, by its path, the
 * router secret (routerGate.ts), the connections per replica and per client address
 * (clientAddress.ts), and addresses blocked for misbehaving (addressGuard.ts); and a
 * connection past its message rate is closed with the table's code and message. Each
 * refusal is worded from the one table (refusals.ts) and counted through the
 * Observer's `refused`, as the HTTP bounds' are.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { SocketLimits } from '../../config';
import type { AddressGuard } from './addressGuard';
import { clientAddress } from './clientAddress';
import { closeCodeOf, messageOf, refusal, statusOf, type RefusalReason } from './refusals';
import type { RouterGate } from './routerGate';

export interface UpgradeGateOptions {
  /** The path live updates are served on; an upgrade elsewhere is answered 404. */
  readonly path: string;
  readonly router: RouterGate;
  readonly guard: AddressGuard;
  readonly limits: Pick<SocketLimits, 'connections' | 'connectionsPerAddress' | 'refusalDelayMs'>;
  /** Counts a refusal (the Observer port's `refused`). */
  readonly refused: (reason: RefusalReason) => void;
  /** An upgrade whose address block could not be read (the socket is destroyed). */
  readonly failed: (error: unknown) => void;
}

/** What the transport has open now, which the connection bounds are checked against. */
export interface OpenConnections {
  /** Connections open on this replica. */
  readonly total: number;
  /** Connections open per client address (the router's are not counted). */
  readonly perAddress: ReadonlyMap<string, number>;
}

export interface UpgradeGate {
  /**
   * Admits `req` or answers it with its refusal and closes `socket`. Admitted, `accept`
   * is called with the address its connection counts against (null: the router's,
   * exempt from the per-address bounds), at once or once the address's block is read.
   */
  admit(req: IncomingMessage, socket: Duplex, open: OpenConnections, accept: (address: string | null) => void): void;
}

export function createUpgradeGate(options: UpgradeGateOptions): UpgradeGate {
  const { router, guard, limits, refused, failed } = options;
  return {
    admit(req, socket, open, accept) {
      const url = req.url ?? '/';
      const query = url.indexOf('?');
      if ((query === -1 ? url : url.slice(0, query)) !== options.path) return answerUpgrade(socket, 404, 'Not Found');
      // The router is trusted with its own users' limits; only its secret proves it. With
      // a secret set, an upgrade without it gets what a POST without it gets, before any
      // handshake: nothing of the connection is kept.
      const verdict = router.verdict(req.headers);
      if (verdict === 'refused') {
        refused('router_secret');
        return answerUpgrade(socket, statusOf('router_secret') ?? 401, 'Unauthorized', JSON.stringify({ errors: [{ message: messageOf('router_secret'), extensions: { code: refusal('router_secret').code } }] }));
      }
      if (open.total >= limits.connections) {
        refused('replica_connections');
        return answerUpgrade(socket, statusOf('replica_connections') ?? 503, 'Service Unavailable');
      }
      if (verdict === 'router') return accept(null);
      const address = clientAddress(req.socket.remoteAddress);
      if ((open.perAddress.get(address) ?? 0) >= limits.connectionsPerAddress) {
        refused('address_connections');
        return guard.refuse(socket, limits.refusalDelayMs);
      }
      guard
        .blockedFor(address)
        .then((blockedMs) => {
          if (blockedMs === 0) return socket.destroyed ? undefined : accept(address);
          refused('address_blocked');
          guard.refuse(socket, blockedMs);
        })
        .catch((error: unknown) => {
          failed(error);
          socket.destroy();
        });
    },
  };
}

/** The close a connection past its message rate gets (counted as `messages`), or that sent a message of more JSON values than one may have (`message_values`): its code and reason from the table. */
export function refuseMessages(refused: (reason: RefusalReason) => void, reason: 'messages' | 'message_values' = 'messages'): { readonly code: number; readonly reason: string } {
  refused(reason);
  return { code: closeCodeOf(reason) ?? (reason === 'messages' ? 1008 : 1009), reason: messageOf(reason) };
}

/** Answers an upgrade with `status` and closes the socket; `body` is a GraphQL error's JSON. */
function answerUpgrade(socket: Duplex, status: number, text: string, body = ''): void {
  const type = body ? 'content-type: application/json; charset=utf-8\r\n' : '';
  socket.end(`HTTP/1.1 ${status} ${text}\r\nconnection: close\r\n${type}content-length: ${Buffer.byteLength(body)}\r\n${status === 503 ? 'retry-after: 1\r\n' : ''}\r\n${body}`);
  socket.destroy();
}
