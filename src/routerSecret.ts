/**
 * The router secret's checks, shared by the HTTP routes and the WebSocket upgrade: the
 * secret is kept as its SHA-256 digest, and a header is compared digest to digest.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares digests, so neither the secret's length nor its content leaks through timing. */
export function sameSecret(header: string | string[] | undefined, expectedDigest: Buffer): boolean {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return false;
  return timingSafeEqual(digest(value), expectedDigest);
}
