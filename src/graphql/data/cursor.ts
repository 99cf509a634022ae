/**
 * `CursorCodec`: seals a cursor position (cursorPayload.ts) into the opaque cursor a
 * client holds, bound to tenant, list and scope, and opens it again.
 */
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { base64urlLength, base64urlValue, isExactBase64url, packShared, unpack, writeBase64url, type CursorPosition } from './cursorPayload';
import type { GraphQLError } from 'graphql';
import { badUserInput } from '../errors';

export type { CursorPosition } from './cursorPayload';

const NONCE_BYTES = 12;
// 96-bit tags (NIST SP 800-38D allows them): a forgery still needs ~2^96 tries, each a request.
const TAG_BYTES = 12;
/** Two page references of up to 2 048 characters each, plus the rest, sealed and in base64url: room enough. */
const MAX_CURSOR_LENGTH = 8_192;
/** 12 bytes are exactly 16 base64url characters (no spare bits): the nonce's spelling never varies in length. */
const NONCE_CHARACTERS = 16;
const DOT = 0x2e;

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
    const ciphertext = cipher.update(packShared(position));
    const rest = cipher.final(); // empty: GCM is a stream mode
    const tag = cipher.getAuthTag();
    // Nonce, ciphertext and tag in one buffer spelled once: the nonce is exactly
    // NONCE_CHARACTERS of it, so the dot goes there.
    const whole = Buffer.allocUnsafe(NONCE_BYTES + ciphertext.length + rest.length + TAG_BYTES);
    whole.set(nonce, 0);
    whole.set(ciphertext, NONCE_BYTES);
    whole.set(rest, NONCE_BYTES + ciphertext.length);
    whole.set(tag, NONCE_BYTES + ciphertext.length + rest.length);
    const spelled = whole.toString('base64url');
    return `${spelled.slice(0, NONCE_CHARACTERS)}.${spelled.slice(NONCE_CHARACTERS)}`;
  }

  decode(cursor: string, tenantId: string, list: string, argument: 'after' | 'before', scope = ''): CursorPosition {
    if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_LENGTH) throw notOurCursor(argument, list, scope);
    const sealedLength = readCursor(cursor);
    if (sealedLength <= TAG_BYTES) throw notOurCursor(argument, list, scope);
    const sealedEnd = NONCE_BYTES + sealedLength;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, opened.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(associatedData(tenantId, list, scope));
      decipher.setAuthTag(opened.subarray(sealedEnd - TAG_BYTES, sealedEnd));
      const plain = decipher.update(opened.subarray(NONCE_BYTES, sealedEnd - TAG_BYTES));
      const rest = decipher.final(); // checks the tag; empty: GCM is a stream mode
      return unpack(rest.length === 0 ? plain : Buffer.concat([plain, rest]));
    } catch {
      throw notOurCursor(argument, list, scope);
    }
  }
}

function notOurCursor(argument: 'after' | 'before', list: string, scope: string): GraphQLError {
  return badUserInput(`"${argument}" is not a cursor issued by this server for ${list} of this tenant${scope ? ' with these arguments' : ''}; use a cursor from this connection's edges or pageInfo`);
}

/**
 * The bytes of a cursor being opened (nonce, then ciphertext and tag), decoded in place
 * of two Buffers per request; `decode` uses them before it returns.
 */
const opened = Buffer.allocUnsafe(base64urlLength(MAX_CURSOR_LENGTH));

/**
 * Decodes `<nonce>.<ciphertext+tag>` into `opened` and returns the length of the
 * ciphertext and tag, or -1 for anything not spelled as `encode` spells cursors: one dot,
 * base64url on either side, a nonce of NONCE_BYTES, and one spelling per cursor (a last
 * character whose spare bits differ is not the same cursor).
 */
function readCursor(cursor: string): number {
  if (cursor.length <= NONCE_CHARACTERS || cursor.charCodeAt(NONCE_CHARACTERS) !== DOT) return -1;
  for (let i = 0; i < cursor.length; i += 1) {
    if (i !== NONCE_CHARACTERS && base64urlValue(cursor.charCodeAt(i)) < 0) return -1;
  }
  const sealedStart = NONCE_CHARACTERS + 1;
  if (sealedStart === cursor.length || !isExactBase64url(cursor, sealedStart, cursor.length)) return -1;
  writeBase64url(cursor, 0, NONCE_CHARACTERS, opened, 0);
  return writeBase64url(cursor, sealedStart, cursor.length, opened, NONCE_BYTES) - NONCE_BYTES;
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
