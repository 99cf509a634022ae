import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One message a subgraph POSTed to the callback endpoint, as received. */
export interface CallbackMessage {
  readonly path: string;
  readonly protocol: string | undefined;
  readonly contentType: string | undefined;
  readonly body: { kind?: string; action?: string; id?: string; verifier?: string; payload?: any; errors?: any[] };
  /** What the endpoint answered. */
  readonly status: number;
}

/**
 * A router's callback endpoint as Apollo's HTTP callback protocol describes it
 * (`callback/1.0`): it knows the subscriptions it registered (id and verifier), answers
 * a message of a known one 204, one with another verifier 400, and one it does not
 * know (never registered, or forgotten: its client left) 404. Every request is kept,
 * including those to paths that are no callback at all, so a test can say nothing was sent.
 */
export interface CallbackRouter {
  /** The endpoint's origin (`http://127.0.0.1:port`). */
  readonly origin: string;
  readonly messages: CallbackMessage[];
  /** The callback URL of subscription `id`, registered with `verifier`. */
  register(id: string, verifier: string): string;
  /** Forgets `id`: its next message is answered 404. */
  forget(id: string): void;
  /** Answers every message `status` (a router that is down: 503) until set back to undefined. */
  failWith(status: number | undefined): void;
  close(): Promise<void>;
}

export async function startCallbackRouter(): Promise<CallbackRouter> {
  const known = new Map<string, string>();
  const messages: CallbackMessage[] = [];
  let failing: number | undefined;
  const server: Server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      let body: CallbackMessage['body'];
      try {
        body = JSON.parse(text);
      } catch {
        body = {};
      }
      const id = /^\/callback\/([^/]+)$/.exec(req.url ?? '')?.[1];
      const verifier = id === undefined ? undefined : known.get(id);
      const status = failing ?? (verifier === undefined || body.id !== id ? 404 : body.verifier !== verifier ? 400 : 204);
      messages.push({ path: req.url ?? '', protocol: req.headers['subscription-protocol'] as string | undefined, contentType: req.headers['content-type'], body, status });
      res.writeHead(status, status === 204 ? { 'subscription-protocol': 'callback/1.0' } : {}).end();
    });
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    messages,
    register(id, verifier) {
      known.set(id, verifier);
      return `${origin}/callback/${id}`;
    },
    forget: (id) => void known.delete(id),
    failWith: (status) => void (failing = status),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
