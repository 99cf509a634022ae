/**
 * `CursorCodec`: seals a cursor position (cursorPayload.ts) into the opaque cursor a
 * client holds, bound to tenant, list and scope, and opens it again.
 */
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { pack, unpack, type CursorPosition } from './cursorPayload';
import { badUserInput } from '../errors';

export type { CursorPosition } from './cursorPayload';

const NONCE_BYTES = 12;
// 96-bit tags (NIST SP 800-38D allows them): a forgery still needs ~2^96 tries, each a request.
const TAG_BYTES = 12;
/** Two page references of up to 2 048 characters each, plus the rest, sealed and in base64url: room enough. */
const MAX_CURSOR_LENGTH = 8_192;

/**
 * Opaque connection cursors, sealed with AES-256-GCM (key derived by HKDF from
 * WFS_CURSOR_SECRET): they reveal nothing (not the tenant, not the upstream's page
 * reference) and cannot be forged or altered. What a cursor is for (tenant, list, and
 * the filter or parent of the connection) is the associated data, bound by the tag but
 * not carried, which keeps cursors short: a cursor from another tenant, list, filter or
 * parent fails to open, and is BAD_USER_INPUT before any upstream call.
 *
 * Format: `<nonce>.<ciphertext+tag>`, both base64url; the plaintext is the compact
 * binary record of `cursorPayload.ts`.
 */
export class CursorCodec {
  // A KeyObject made once: ciphers given a raw Buffer key re-import it on every call.
  private readonly key: KeyObject;

  constructor(secret: Buffer) {
    this.key = createSecretKey(Buffer.from(hkdfSync('sha256', secret, 'wfs-cursor', 'aes-256-gcm v1', 32)));
  }

  /** `scope`: the canonical filter or parent of the connection (`''` for a plain list). */
  encode(tenantId: string, list: string, position: CursorPosition, scope = ''): string {
    const nonce = freshNonce();
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(tenantId, list, scope));
    const sealed = Buffer.concat([cipher.update(pack(position)), cipher.final(), cipher.getAuthTag()]);
    return `${nonce.toString('base64url')}.${sealed.toString('base64url')}`;
  }

  decode(cursor: string, tenantId: string, list: string, argument: 'after' | 'before', scope = ''): CursorPosition {
    const invalid = () =>
      badUserInput(`"${argument}" is not a cursor issued by this server for ${list} of this tenant${scope ? ' with these arguments' : ''}; use a cursor from this connection's edges or pageInfo`);
    if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_LENGTH) throw invalid();
    const dot = cursor.indexOf('.');
    if (dot < 0 || !/^[A-Za-z0-9_-]+$/.test(cursor.slice(0, dot)) || !/^[A-Za-z0-9_-]+$/.test(cursor.slice(dot + 1))) throw invalid();
    const nonce = Buffer.from(cursor.slice(0, dot), 'base64url');
    const sealed = Buffer.from(cursor.slice(dot + 1), 'base64url');
    if (nonce.length !== NONCE_BYTES || sealed.length <= TAG_BYTES) throw invalid();
    // One spelling per cursor: a last character whose spare bits differ is not the same cursor.
    if (sealed.toString('base64url') !== cursor.slice(dot + 1) || nonce.toString('base64url') !== cursor.slice(0, dot)) throw invalid();
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(associatedData(tenantId, list, scope));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]);
      return unpack(plain);
    } catch {
      throw invalid();
    }
  }
}

/** Nonces for this many cursors are drawn from the CSPRNG at once: one call per 512 cursors instead of one each. */
const NONCES_PER_DRAW = 512;
let nonces = Buffer.alloc(0);
let nextNonce = 0;

/** A fresh random nonce, never handed out twice (each draw is a new buffer, sliced in turn). */
function freshNonce(): Buffer {
  if (nextNonce + NONCE_BYTES > nonces.length) {
    nonces = randomBytes(NONCE_BYTES * NONCES_PER_DRAW);
    nextNonce = 0;
  }
  const nonce = nonces.subarray(nextNonce, nextNonce + NONCE_BYTES);
  nextNonce += NONCE_BYTES;
  return nonce;
}

function associatedData(tenantId: string, list: string, scope: string): Buffer {
  return Buffer.from(`wfs-cursor:v2\u0000${tenantId}\u0000${list}\u0000${scope}`);
}
