import type { IncomingMessage, ServerResponse } from 'node:http';

/** A response to write: status, extra headers and a raw body. */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

/** A JSON reply of `value`. */
export function jsonReply(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return { status, body: JSON.stringify(value), ...(headers && { headers }) };
}

/** The non-OAuth error shape of the shards (clients must not depend on it). */
export function detailReply(status: number, detail: string, headers?: Record<string, string>): Reply {
  return jsonReply(status, { detail }, headers);
}

/**
 * Writes a reply with a Content-Length, so keep-alive clients can reuse the socket.
 * Headers given by the reply (e.g. a fault's) override the JSON content type, but
 * never the length: a wrong length would break the client's connection, not test it.
 */
export function send(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.writableEnded || res.headersSent) return;
  const body = Buffer.from(reply.body, 'utf8');
  const headers: Record<string, string | number> = { 'content-type': 'application/json' };
  for (const [name, value] of Object.entries(reply.headers ?? {})) headers[name.toLowerCase()] = value;
  headers['content-length'] = body.length;
  res.writeHead(reply.status, headers);
  res.end(body);
}

/** Reads a request body up to `limit` bytes; null when it is larger. */
export function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Keep draining past the limit (so the socket stays usable), but stop buffering.
      if (size > limit) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Timers the emulator is waiting on (simulated latency). close() clears them, so a
 * closed emulator leaves nothing behind that keeps the process or a jest worker alive.
 */
export class Timers {
  private readonly pending = new Set<NodeJS.Timeout>();
  private closed = false;

  delay(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.closed) return;
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve();
      }, ms);
      this.pending.add(timer);
    });
  }

  clear(): void {
    this.closed = true;
    for (const timer of this.pending) clearTimeout(timer);
    this.pending.clear();
  }
}

/** The origin to print for a bound address: wildcard addresses are reached via loopback. */
export function originFor(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '') return `http://127.0.0.1:${port}`;
  if (host === '::') return `http://[::1]:${port}`;
  return host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
}
