import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { PageRef } from '../upstream/pageReference';
import { badUserInput } from './errors';

/** Where an edge sits upstream: the page it came on and its position there. */
export interface CursorPosition {
  readonly ref: PageRef | null;
  /** The page size the page was fetched with. */
  readonly size: number;
  readonly index: number;
  readonly id: string;
  /** For the last record of an upstream page: that page's `next`, so resuming costs one call, not two. */
  readonly next?: PageRef | null;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Two page references of up to 2 048 characters each, plus the rest, sealed and in base64url: room enough. */
const MAX_CURSOR_LENGTH = 8_192;
/** Plaintexts shorter than this are never worth a deflate attempt. */
const DEFLATE_FROM = 96;

// Payload flags (first plaintext byte).
const HAS_REF = 1;
const HAS_NEXT = 2;
const REF_SIZED = 4; // the ref ended with `&page_size=<size>`, dropped and put back
const NEXT_SIZED = 8;
const DEFLATED = 128; // the bytes after the flag are raw-deflated

/**
 * Opaque connection cursors, sealed with AES-256-GCM (key derived by HKDF from
 * WFS_CURSOR_SECRET): they reveal nothing (not the tenant, not the upstream's page
 * reference) and cannot be forged or altered. What a cursor is for (tenant, list, and
 * the filter or parent of the connection) is the associated data, bound by the tag but
 * not carried, which keeps cursors short: a cursor from another tenant, list, filter or
 * parent fails to open, and is BAD_USER_INPUT before any upstream call.
 *
 * Format: `<nonce>.<ciphertext+tag>`, both base64url. The plaintext is a small binary
 * record: flags, page size and index (varints), record id, page reference and, for a
 * page's last record, the next reference; a trailing `page_size` equal to the size is
 * dropped, and the rest is deflated when that makes it shorter.
 */
export class CursorCodec {
  // A KeyObject made once: ciphers given a raw Buffer key re-import it on every call.
  private readonly key: KeyObject;

  constructor(secret: Buffer) {
    this.key = createSecretKey(Buffer.from(hkdfSync('sha256', secret, 'wfs-cursor', 'aes-256-gcm v1', 32)));
  }

  /** `scope`: the canonical filter or parent of the connection (`''` for a plain list). */
  encode(tenantId: string, list: string, position: CursorPosition, scope = ''): string {
    const nonce = randomBytes(NONCE_BYTES);
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

function associatedData(tenantId: string, list: string, scope: string): Buffer {
  return Buffer.from(`wfs-cursor:v2\u0000${tenantId}\u0000${list}\u0000${scope}`);
}

function sizeSuffix(size: number): string {
  return `page_size=${size}`;
}

/** A reference without a trailing `page_size` equal to the walk's size (put back by `widen`). */
function narrow(ref: string, size: number): { text: string; sized: boolean } {
  const suffix = sizeSuffix(size);
  if (ref === suffix) return { text: '', sized: true };
  if (ref.endsWith(`&${suffix}`)) return { text: ref.slice(0, -suffix.length - 1), sized: true };
  return { text: ref, sized: false };
}

function widen(text: string, size: number, sized: boolean): string {
  if (!sized) return text;
  return text === '' ? sizeSuffix(size) : `${text}&${sizeSuffix(size)}`;
}

class Writer {
  private readonly parts: number[] = [];
  private readonly chunks: Buffer[] = [];
  varint(value: number): void {
    let rest = value;
    while (rest >= 0x80) {
      this.parts.push((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    this.parts.push(rest);
  }
  text(value: string): void {
    const bytes = Buffer.from(value, 'utf8');
    this.varint(bytes.length);
    this.flush();
    this.chunks.push(bytes);
  }
  flush(): void {
    if (this.parts.length > 0) this.chunks.push(Buffer.from(this.parts.splice(0)));
  }
  bytes(): Buffer {
    this.flush();
    return Buffer.concat(this.chunks);
  }
}

class Reader {
  private at = 0;
  constructor(private readonly buffer: Buffer) {}
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let shift = 0; shift < 8; shift += 1) {
      const byte = this.buffer[this.at++];
      if (byte === undefined) throw new RangeError('truncated');
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
    throw new RangeError('varint too long');
  }
  text(): string {
    const length = this.varint();
    if (this.at + length > this.buffer.length) throw new RangeError('truncated');
    const value = this.buffer.toString('utf8', this.at, this.at + length);
    this.at += length;
    return value;
  }
  done(): boolean {
    return this.at === this.buffer.length;
  }
}

function pack(position: CursorPosition): Buffer {
  const ref = position.ref === null ? null : narrow(position.ref, position.size);
  const next = position.next ? narrow(position.next, position.size) : null;
  const flags = (ref ? HAS_REF : 0) | (next ? HAS_NEXT : 0) | (ref?.sized ? REF_SIZED : 0) | (next?.sized ? NEXT_SIZED : 0);
  const body = new Writer();
  body.varint(position.size);
  body.varint(position.index);
  body.text(position.id);
  if (ref) body.text(ref.text);
  if (next) body.text(next.text);
  const plain = body.bytes();
  if (plain.length >= DEFLATE_FROM) {
    const deflated = deflateRawSync(plain);
    if (deflated.length < plain.length) return Buffer.concat([Buffer.of(flags | DEFLATED), deflated]);
  }
  return Buffer.concat([Buffer.of(flags), plain]);
}

function unpack(plain: Buffer): CursorPosition {
  const flags = plain[0];
  if (flags === undefined) throw new RangeError('empty');
  const rest = plain.subarray(1);
  // Sealed by us, so the size is bounded already; the limit is a second fence.
  const body = new Reader(flags & DEFLATED ? inflateRawSync(rest, { maxOutputLength: 16_384 }) : rest);
  const size = body.varint();
  const index = body.varint();
  const id = body.text();
  if (size < 1) throw new RangeError('size');
  const ref = flags & HAS_REF ? widen(body.text(), size, (flags & REF_SIZED) !== 0) : null;
  const next = flags & HAS_NEXT ? widen(body.text(), size, (flags & NEXT_SIZED) !== 0) : undefined;
  if (!body.done()) throw new RangeError('trailing bytes');
  return { ref, size, index, id, ...(next !== undefined && { next }) };
}
