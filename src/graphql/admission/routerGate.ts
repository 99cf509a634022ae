/**
 * The router-secret decision, made one way for every transport: a query's POST
 * (http/routes.ts), a WebSocket upgrade (http/liveSocket.ts) and the connection
 * bounds' router exemption (http/connectionBounds.ts, http/requestBounds.ts) all ask `verdict`. With
 * `WFS_ROUTER_SECRET` set, a request without it is refused before anything else
 * of it is read (401 `UNAUTHENTICATED`, for an upgrade before the handshake), and
 * one that carries it is the router's: exempt from the per-address shares, as the
 * router carries many users on a few addresses and limits them itself.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { digest, sameSecret } from '../../routerSecret';

/** `router`: carries the secret; `refused`: a secret is set and this does not carry it; `open`: no secret is set. */
export type RouterVerdict = 'router' | 'refused' | 'open';

export interface RouterGate {
  /** A secret is set: every request must carry it. */
  readonly required: boolean;
  verdict(headers: IncomingHttpHeaders): RouterVerdict;
}


export function createRouterGate(secret: string | null): RouterGate {
  // Kept as its digest, compared digest to digest (routerSecret.ts).
  const expected = secret ? digest(secret) : null;
  return {
    required: expected !== null,
    verdict: (headers) => (expected === null ? 'open' : sameSecret(headers['router-authorization'], expected) ? 'router' : 'refused'),
  };
}
