/**
 * What a cursor says (`CursorPosition`: the upstream page and the place on it), and the
 * compact bytes it is packed into before cursor.ts seals them.
 */
import { inflateRawSync } from 'node:zlib';
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
 * stuff of upstream page tokens) are stored as the bytes they encode; and a page's
 * last edge stores its `next` as what differs from its reference (the two mostly share
 * a beginning and an end: the same URL or token with another offset).
 *
 * Earlier versions raw-deflated a page's last edge instead. Such cursors still open
 * (DEFLATED), so a rolling upgrade breaks no client's paging; none is written any more:
 * zlib's native memory made V8 run a full collection every few requests.
 */

/** The longest plaintext we inflate (cursors of earlier versions): cursors are sealed by us, so this is a second fence. */
const MAX_PLAIN_BYTES = 16_384;

// Flags (the first byte).
const HAS_REF = 1;
const HAS_NEXT = 2;
const REF_SIZED = 4; // the ref ended with `&page_size=<size>`, dropped and put back
const NEXT_SIZED = 8;
const NEXT_DELTA = 16; // `next` is stored as the lengths it shares with the ref's start and end, and its middle
const DEFLATED = 128; // the bytes after the flags are raw-deflated (written by earlier versions only)

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

/** How many characters `a` and `b` share at their start, and then at their end (never overlapping). */
function sharedEnds(a: string, b: string): { head: number; tail: number } {
  const most = Math.min(a.length, b.length);
  let head = 0;
  while (head < most && a.charCodeAt(head) === b.charCodeAt(head)) head += 1;
  let tail = 0;
  while (tail < most - head && a.charCodeAt(a.length - 1 - tail) === b.charCodeAt(b.length - 1 - tail)) tail += 1;
  // Never split a surrogate pair: the middle is written as UTF-8.
  if (head > 0 && isHighSurrogate(b.charCodeAt(head - 1))) head -= 1;
  if (tail > 0 && isHighSurrogate(b.charCodeAt(b.length - tail - 1))) tail -= 1;
  return { head, tail };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

export function pack(position: CursorPosition): Buffer {
  const ref = position.ref === null ? null : narrow(position.ref, position.size);
  const next = position.next ? narrow(position.next, position.size) : null;
  // A page's last edge: `next` as what it does not share with the ref, when they share something.
  const delta = ref && next ? sharedEnds(ref.text, next.text) : null;
  const useDelta = delta !== null && delta.head + delta.tail > 0;
  const flags = (ref ? HAS_REF : 0) | (next ? HAS_NEXT : 0) | (ref?.sized ? REF_SIZED : 0) | (next?.sized ? NEXT_SIZED : 0) | (useDelta ? NEXT_DELTA : 0);
  const body = new Writer();
  body.varint(position.size);
  body.varint(position.index);
  body.text(position.id);
  if (ref) body.reference(ref.text);
  if (next && useDelta) {
    body.varint(delta.head);
    body.varint(delta.tail);
    body.reference(next.text.slice(delta.head, next.text.length - delta.tail));
  } else if (next) body.reference(next.text);
  return Buffer.concat([Buffer.of(flags), body.bytes()]);
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
  const refText = flags & HAS_REF ? body.reference() : null;
  const ref = refText === null ? null : widen(refText, size, (flags & REF_SIZED) !== 0);
  let next: string | undefined;
  if (flags & HAS_NEXT) {
    let text: string;
    if (flags & NEXT_DELTA) {
      if (refText === null) throw new RangeError('delta without a ref');
      const head = body.varint();
      const tail = body.varint();
      if (head + tail > refText.length) throw new RangeError('delta longer than the ref');
      text = refText.slice(0, head) + body.reference() + refText.slice(refText.length - tail);
    } else text = body.reference();
    next = widen(text, size, (flags & NEXT_SIZED) !== 0);
  }
  if (!body.done()) throw new RangeError('trailing bytes');
  return { ref, size, index, id, ...(next !== undefined && { next }) };
}
