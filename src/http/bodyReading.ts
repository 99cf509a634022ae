/**
 * A request body read within its bounds, and counted as it is held: its bytes and its
 * JSON's structural units as they arrive (memory/jsonSize.ts), charged what its text and
 * parse may hold together against the replica's bound and its address's share, from
 * its first chunk until its response closes. Past its bytes or its values, 413; past a
 * bound it shares, the body is read to its end and dropped before the refusal (a client
 * still sending would otherwise lose the answer to a reset); past its deadline, 408.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestLimits } from '../config';
import { JsonUnits, heldJsonBytes } from '../memory/jsonSize';

/**
 * The client closed the connection while sending its body: its outcome, not a fault of
 * ours, so the routes count it with the other aborts and log it at debug (anyone can
 * cause it at will; an error line with a stack each time would let them fill the log).
 */
export class ClientAbortedError extends Error {
  override readonly name = 'ClientAbortedError';
}

/** What one client address holds: its requests in flight and their body bytes. */
export interface AddressHold {
  readonly address: string;
  requests: number;
  bytes: number;
}

/** What a body being read charges until its response closes: its address's hold (null for the router, exempt) and the bytes it was charged. */
export interface BodyCharge {
  /** The client address's hold; null for the router (exempt from the share). */
  readonly hold: AddressHold | null;
  /** What the body was charged, given back when the response closes. */
  bodyBytes: number;
}

/** A body that declares a length within `maxBytes`: reading it to its end costs no memory (its bytes are dropped). */
function drainable(req: IncomingMessage, maxBytes: number): boolean {
  const length = Number(req.headers['content-length']);
  return Number.isInteger(length) && length <= maxBytes;
}

/**
 * What `readBody` gives: the body's text; `too_large`, a body over `limits.bodyBytes` or
 * `limits.bodyValues`; or `refused`, the body bound it met (counted by `readBody` when
 * it met it, but a deadline, which is counted with its answer).
 */
export type BodyRead =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'too_large'; readonly by: 'bytes' | 'values' }
  | { readonly kind: 'refused'; readonly reason: 'body_bytes' | 'address_body_bytes' | 'body_timeout' };
type BodyStop = Exclude<BodyRead, { kind: 'text' }>;
const TOO_LARGE = { bytes: { kind: 'too_large', by: 'bytes' }, values: { kind: 'too_large', by: 'values' } } as const satisfies Record<string, BodyStop>;
const REFUSED = {
  body_bytes: { kind: 'refused', reason: 'body_bytes' },
  address_body_bytes: { kind: 'refused', reason: 'address_body_bytes' },
  body_timeout: { kind: 'refused', reason: 'body_timeout' },
} as const satisfies Record<string, BodyStop>;

/**
 * The bytes the requests' bodies hold, counted as parsed (memory/jsonSize.ts: the text
 * and what `JSON.parse` makes of it), against their bound and each address's share of it.
 */
export class BodyBytes {
  private held = 0;
  constructor(
    private readonly max: number,
    private readonly maxPerAddress: number,
    private readonly onChange: (held: number) => void = () => undefined,
  ) {}
  /**
   * Holds `bytes` more of a body that holds `own` already, for `hold`'s address (null:
   * exempt from the share), if they fit; else the bound they do not fit. An address may
   * always hold one body, however large (a body of the most values a body may have
   * counts more than a quarter of the bound): its share bounds how many at once.
   */
  take(bytes: number, own: number, hold: AddressHold | null): 'body_bytes' | 'address_body_bytes' | undefined {
    if (hold && hold.bytes + bytes > this.maxPerAddress && hold.bytes > own) return 'address_body_bytes';
    if (this.held + bytes > this.max) return 'body_bytes';
    this.held += bytes;
    if (hold) hold.bytes += bytes;
    this.onChange(this.held);
    return undefined;
  }
  give(bytes: number, hold: AddressHold | null): void {
    if (bytes === 0) return;
    this.held -= bytes;
    if (hold) hold.bytes -= bytes;
    this.onChange(this.held);
  }
}

/**
 * The request body as text; `too_large` past `bodyBytes` or `bodyValues` (its JSON's
 * structural units, counted as it arrives); refused for `body_bytes` or
 * `address_body_bytes` when the bodies of the requests in flight, or those of its
 * address, already hold their bound; `body_timeout` when it has not arrived whole
 * within `bodyTimeoutMs`. A body is charged what it may hold once parsed
 * (`heldJsonBytes`), from its first chunk until `res` closes (its parse lives that
 * long); a refused, timed-out or abandoned one gives it back at once. Read with stream
 * events, not `for await`: an async iterator over the request costs more than the small
 * bodies it reads.
 */
export function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  buffered: BodyBytes,
  ends: BodyCharge,
  limits: Pick<RequestLimits, 'bodyBytes' | 'bodyValues' | 'bodyTimeoutMs'>,
  onRefused?: (reason: 'body_bytes' | 'address_body_bytes') => void,
): Promise<BodyRead> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const units = new JsonUnits();
    let size = 0;
    /** What the body is charged: heldJsonBytes of its bytes and units so far. */
    let held = 0;
    /** The bound a body being drained was refused for (its answer, should the deadline come first). */
    let refused: BodyStop | undefined;
    // One deadline for the whole body, the drain of a refused one included.
    const deadline = setTimeout(() => {
      cleanup();
      release();
      resolve(refused ?? REFUSED.body_timeout);
    }, limits.bodyTimeoutMs);
    const settle = (outcome: BodyRead) => {
      clearTimeout(deadline);
      resolve(outcome);
    };
    const stop = (outcome: BodyStop) => {
      cleanup();
      release();
      if (outcome.kind === 'refused' && outcome.reason !== 'body_timeout') onRefused?.(outcome.reason);
      if (outcome.kind === 'refused' && drainable(req, limits.bodyBytes)) {
        // A body of a size we accept is read to its end and dropped, nothing kept, before
        // the answer: a client still sending would otherwise meet a connection reset
        // and lose the answer that tells it to retry (the deadline still applies).
        refused = outcome;
        const done = () => settle(outcome);
        req.once('end', done).once('close', done).once('error', done);
        req.resume();
        return;
      }
      // The rest is not read: the answer ends the exchange.
      settle(outcome);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limits.bodyBytes) return stop(TOO_LARGE.bytes);
      units.add(chunk);
      if (units.units > limits.bodyValues) return stop(TOO_LARGE.values);
      const charge = heldJsonBytes(size + chunk.length, units.units);
      const full = buffered.take(charge - held, held, ends.hold);
      if (full) return stop(REFUSED[full]);
      held = charge;
      size += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      clearTimeout(deadline);
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      // The bytes stay counted until the response closes (the handler's close listener
      // gives them back; none of the closures here is kept through the upstream wait).
      if (res.closed) release();
      else ends.bodyBytes = held;
      chunks.length = 0;
      resolve({ kind: 'text', text });
    };
    // node:http ends the body stream with `aborted` (ECONNRESET) or closes it early when the client goes away.
    const onError = (error: NodeJS.ErrnoException) => {
      cleanup();
      clearTimeout(deadline);
      release();
      reject(req.destroyed || error.code === 'ECONNRESET' ? new ClientAbortedError('the client closed the connection while sending its body') : error);
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      clearTimeout(deadline);
      release();
      reject(new ClientAbortedError('the client closed the connection while sending its body'));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const release = () => {
      buffered.give(held, ends.hold);
      held = 0;
      size = 0;
      chunks.length = 0;
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
