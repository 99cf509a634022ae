import { Agent, type Dispatcher } from 'undici';

/** Timeouts in milliseconds for every upstream call. */
export interface HttpTimeouts {
  readonly connectMs: number;
  readonly headersMs: number;
  readonly bodyMs: number;
}

export const DEFAULT_TIMEOUTS: HttpTimeouts = { connectMs: 3_000, headersMs: 8_000, bodyMs: 8_000 };

/**
 * One undici Agent for the process: it keeps a keep-alive pool per origin, so each
 * shard host and the identity provider get their own warm connections.
 */
export function createUpstreamAgent(timeouts: HttpTimeouts = DEFAULT_TIMEOUTS): Dispatcher {
  return new Agent({
    connections: 64,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
    connect: { timeout: timeouts.connectMs },
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.bodyMs,
    maxResponseSize: MAX_BODY_BYTES,
  });
}

/** A hostile or broken upstream must not fill our memory: bodies above this fail. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Reads a JSON body; `undefined` when it is not JSON. Always consumes the body. */
export async function readJson(body: Dispatcher.ResponseData['body']): Promise<unknown> {
  const text = await body.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Parses `Retry-After` (delta-seconds or an HTTP date) into seconds, or undefined. */
export function retryAfterSeconds(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

/** A network error as a short phrase; never includes request headers or bodies. */
export function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (error.name === 'AbortError' || error.name === 'TimeoutError') return 'timed out or cancelled';
    return typeof code === 'string' ? code : error.name;
  }
  return 'unknown error';
}
