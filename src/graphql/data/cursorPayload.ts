/**
 * What a cursor says (`CursorPosition`: the upstream page and the place on it), and the
 * compact bytes it is packed into before cursor.ts seals them.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { PageRef } from '../../upstream/pageReference';

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

/**
 * The plaintext of a cursor, kept small because clients store and send it: flags,
 * page size and index (varints), record id, page reference and, for a page's last
 * record, the next reference. References shrink three ways, each exactly reversible:
 * a trailing `page_size` equal to the size is dropped; runs of base64url (the usual
 * stuff of upstream page tokens) are stored as the bytes they encode; and the whole
 * of a page's last edge, whose `next` mostly repeats its reference, is raw-deflated when
 * that is shorter.
 */

/** Plaintexts shorter than this are never worth a deflate attempt. */
const DEFLATE_FROM = 96;
/**
 * A small window and little memory: zlib's defaults allocate about 256 KiB per call,
 * which costs more than the deflating of a few hundred bytes. Cursors are short; a
 * 512-byte window still finds a `next` repeating its reference.
 */
const DEFLATE_OPTIONS = { windowBits: 9, memLevel: 1 } as const;

/** The longest plaintext we inflate: cursors are sealed by us, so this is a second fence. */
const MAX_PLAIN_BYTES = 16_384;

// Flags (the first byte).
const HAS_REF = 1;
const HAS_NEXT = 2;
const REF_SIZED = 4; // the ref ended with `&page_size=<size>`, dropped and put back
const NEXT_SIZED = 8;
const DEFLATED = 128; // the bytes after the flags are raw-deflated

/** base64url runs this long or longer are stored as bytes. */
const MIN_BINARY_RUN = 8;
const BASE64URL_RUN = /[A-Za-z0-9_-]+/g;

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
  /** A page reference: segments, each `varint(length << 1 | binary)` then its bytes, ending with 0. */
  reference(value: string): void {
    let at = 0;
    for (const match of value.matchAll(BASE64URL_RUN)) {
      const run = match[0];
      const bytes = run.length >= MIN_BINARY_RUN ? Buffer.from(run, 'base64url') : null;
      // Only runs that encode back to themselves exactly (no stray padding bits).
      if (!bytes || bytes.toString('base64url') !== run) continue;
      if (match.index > at) this.segment(Buffer.from(value.slice(at, match.index), 'utf8'), false);
      this.segment(bytes, true);
      at = match.index + run.length;
    }
    if (at < value.length) this.segment(Buffer.from(value.slice(at), 'utf8'), false);
    this.varint(0);
  }
  private segment(bytes: Buffer, binary: boolean): void {
    this.varint(bytes.length * 2 + (binary ? 1 : 0));
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
    return this.bytes(this.varint()).toString('utf8');
  }
  reference(): string {
    let value = '';
    for (let header = this.varint(); header !== 0; header = this.varint()) {
      const bytes = this.bytes(Math.floor(header / 2));
      value += header % 2 === 1 ? bytes.toString('base64url') : bytes.toString('utf8');
    }
    return value;
  }
  private bytes(length: number): Buffer {
    if (length === 0 || this.at + length > this.buffer.length) {
      if (length === 0) return Buffer.alloc(0);
      throw new RangeError('truncated');
    }
    const value = this.buffer.subarray(this.at, this.at + length);
    this.at += length;
    return value;
  }
  done(): boolean {
    return this.at === this.buffer.length;
  }
}

export function pack(position: CursorPosition): Buffer {
  const ref = position.ref === null ? null : narrow(position.ref, position.size);
  const next = position.next ? narrow(position.next, position.size) : null;
  const flags = (ref ? HAS_REF : 0) | (next ? HAS_NEXT : 0) | (ref?.sized ? REF_SIZED : 0) | (next?.sized ? NEXT_SIZED : 0);
  const body = new Writer();
  body.varint(position.size);
  body.varint(position.index);
  body.text(position.id);
  if (ref) body.reference(ref.text);
  if (next) body.reference(next.text);
  const plain = body.bytes();
  // Only a page's last edge carries two references, mostly alike: worth a deflate (which
  // costs more than the rest of sealing a cursor), and it is one edge per upstream page.
  if (next && plain.length >= DEFLATE_FROM) {
    const deflated = deflateRawSync(plain, DEFLATE_OPTIONS);
    if (deflated.length < plain.length) return Buffer.concat([Buffer.of(flags | DEFLATED), deflated]);
  }
  return Buffer.concat([Buffer.of(flags), plain]);
}

export function unpack(plain: Buffer): CursorPosition {
  const flags = plain[0];
  if (flags === undefined) throw new RangeError('empty');
  const rest = plain.subarray(1);
  const body = new Reader(flags & DEFLATED ? inflateRawSync(rest, { maxOutputLength: MAX_PLAIN_BYTES, windowBits: 9 }) : rest);
  const size = body.varint();
  const index = body.varint();
  const id = body.text();
  if (size < 1) throw new RangeError('size');
  const ref = flags & HAS_REF ? widen(body.reference(), size, (flags & REF_SIZED) !== 0) : null;
  const next = flags & HAS_NEXT ? widen(body.reference(), size, (flags & NEXT_SIZED) !== 0) : undefined;
  if (!body.done()) throw new RangeError('trailing bytes');
  return { ref, size, index, id, ...(next !== undefined && { next }) };
}
