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

/** The value of each base64url character by char code, -1 for any other. */
const BASE64URL_VALUE = new Int8Array(128).fill(-1);
for (const [value, char] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'].entries()) {
  BASE64URL_VALUE[char.charCodeAt(0)] = value;
}

/** The 6 bits a base64url character stands for, or -1 for any other character. */
export function base64urlValue(code: number): number {
  return code < 128 ? BASE64URL_VALUE[code]! : -1;
}

/**
 * Whether the base64url characters `value[start..end)` are the one spelling of what they
 * encode, as `Buffer.from(run, 'base64url').toString('base64url') === run` says: not one
 * character too many for a whole byte, and no stray bits in the last character.
 */
export function isExactBase64url(value: string, start: number, end: number): boolean {
  const spare = (end - start) % 4;
  if (spare === 0) return true;
  if (spare === 1) return false;
  const last = base64urlValue(value.charCodeAt(end - 1));
  return (last & (spare === 2 ? 0x0f : 0x03)) === 0;
}

/**
 * Writes the bytes the base64url characters `value[start..end)` encode into `into` at
 * `at` (room for `base64urlLength` of them, characters checked by the caller) and returns
 * where they end. Spare bits of the last character are dropped, as Buffer drops them.
 */
export function writeBase64url(value: string, start: number, end: number, into: Buffer, at: number): number {
  let i = start;
  let to = at;
  for (; i + 4 <= end; i += 4) {
    const bits =
      (base64urlValue(value.charCodeAt(i)) << 18) |
      (base64urlValue(value.charCodeAt(i + 1)) << 12) |
      (base64urlValue(value.charCodeAt(i + 2)) << 6) |
      base64urlValue(value.charCodeAt(i + 3));
    into[to++] = bits >> 16;
    into[to++] = (bits >> 8) & 0xff;
    into[to++] = bits & 0xff;
  }
  // Two or three characters left: one or two bytes.
  if (end - i >= 2) {
    const bits = (base64urlValue(value.charCodeAt(i)) << 12) | (base64urlValue(value.charCodeAt(i + 1)) << 6) | (end - i === 3 ? base64urlValue(value.charCodeAt(i + 2)) : 0);
    into[to++] = bits >> 10;
    if (end - i === 3) into[to++] = (bits >> 2) & 0xff;
  }
  return to;
}

/** How many bytes `characters` base64url characters encode. */
export function base64urlLength(characters: number): number {
  return Math.floor((characters * 3) / 4);
}

// The suffix of the last size seen: every cursor of a walk has the same size.
let suffixSize = Number.NaN;
let suffix = '';

function sizeSuffix(size: number): string {
  if (size !== suffixSize) {
    suffix = `page_size=${size}`;
    suffixSize = size;
  }
  return suffix;
}

const AMPERSAND = 0x26;

/**
 * How much of a reference is kept: its length without a trailing `page_size` equal to
 * the walk's size (put back by `widen`). Shorter than the reference exactly when that
 * suffix was dropped.
 */
function narrowedLength(ref: string, size: number): number {
  const dropped = sizeSuffix(size);
  if (ref === dropped) return 0;
  if (ref.length > dropped.length && ref.endsWith(dropped) && ref.charCodeAt(ref.length - dropped.length - 1) === AMPERSAND) {
    return ref.length - dropped.length - 1;
  }
  return ref.length;
}

function widen(text: string, size: number, sized: boolean): string {
  if (!sized) return text;
  return text === '' ? sizeSuffix(size) : `${text}&${sizeSuffix(size)}`;
}

/** Text segments shorter than this are copied a character at a time: cheaper than a call into Buffer. */
const SHORT_TEXT = 32;

/**
 * Writes the record into one buffer kept between calls (grown when a record does not
 * fit), every varint and byte run in place: `pack` runs twice per request on a paging
 * load, and a Buffer per piece joined at the end cost more than the rest of it.
 */
class Writer {
  private buffer = Buffer.allocUnsafe(1_024);
  private at = 0;

  start(): void {
    this.at = 0;
  }

  byte(value: number): void {
    if (this.at === this.buffer.length) this.grow(1);
    this.buffer[this.at++] = value;
  }

  // The arithmetic of the first version (remainders, not bit operations), so even a
  // size past 2^31 is written as it always was.
  varint(value: number): void {
    let rest = value;
    while (rest >= 0x80) {
      this.byte((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    this.byte(rest);
  }

  /** `value[start..end)` as UTF-8 after its length in bytes, doubled for a text segment of a reference. */
  text(value: string, start = 0, end = value.length, segment = false): void {
    let ascii = true;
    for (let i = start; i < end; i += 1) {
      if (value.charCodeAt(i) >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii && end - start < SHORT_TEXT) {
      this.varint(segment ? (end - start) * 2 : end - start);
      this.room(end - start);
      for (let i = start; i < end; i += 1) this.buffer[this.at++] = value.charCodeAt(i);
      return;
    }
    const part = start === 0 && end === value.length ? value : value.slice(start, end);
    const length = ascii ? part.length : Buffer.byteLength(part, 'utf8');
    this.varint(segment ? length * 2 : length);
    this.room(length);
    this.at += this.buffer.write(part, this.at, length, ascii ? 'latin1' : 'utf8');
  }

  /**
   * The page reference `value[start..end)`: segments, each `varint(length << 1 | binary)`
   * then its bytes, ending with 0. Binary segments are the runs of base64url characters at
   * least MIN_BINARY_RUN long that encode back to themselves exactly; the rest is text.
   */
  reference(value: string, start: number, end: number): void {
    let textStart = start;
    let i = start;
    while (i < end) {
      if (base64urlValue(value.charCodeAt(i)) < 0) {
        i += 1;
        continue;
      }
      const runStart = i;
      while (i < end && base64urlValue(value.charCodeAt(i)) >= 0) i += 1;
      if (i - runStart < MIN_BINARY_RUN || !isExactBase64url(value, runStart, i)) continue;
      if (runStart > textStart) this.text(value, textStart, runStart, true);
      this.binary(value, runStart, i);
      textStart = i;
    }
    if (textStart < end) this.text(value, textStart, end, true);
    this.byte(0);
  }

  /** A binary segment: the bytes the base64url run `value[start..end)` encodes. */
  private binary(value: string, start: number, end: number): void {
    const length = base64urlLength(end - start);
    this.varint(length * 2 + 1);
    this.room(length);
    this.at = writeBase64url(value, start, end, this.buffer, this.at);
  }

  /** The record so far: a view of the shared buffer, good until the next `start`. */
  view(): Buffer {
    return this.buffer.subarray(0, this.at);
  }

  private room(bytes: number): void {
    if (this.at + bytes > this.buffer.length) this.grow(bytes);
  }

  private grow(bytes: number): void {
    const larger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.at + bytes));
    this.buffer.copy(larger, 0, 0, this.at);
    this.buffer = larger;
  }
}

/** Reads the record from `at` on, each string decoded straight from the buffer (no view per segment). */
class Reader {
  constructor(
    private readonly buffer: Buffer,
    private at: number,
  ) {}
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
    return this.string(this.varint(), 'utf8');
  }
  reference(): string {
    let value = '';
    for (let header = this.varint(); header !== 0; header = this.varint()) {
      value += this.string(Math.floor(header / 2), header % 2 === 1 ? 'base64url' : 'utf8');
    }
    return value;
  }
  private string(length: number, encoding: 'utf8' | 'base64url'): string {
    if (length === 0) return '';
    if (this.at + length > this.buffer.length) throw new RangeError('truncated');
    const start = this.at;
    this.at += length;
    return this.buffer.toString(encoding, start, this.at);
  }
  done(): boolean {
    return this.at === this.buffer.length;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

const writer = new Writer();

/**
 * Packs `position` into the shared buffer and returns a view of it, good until the next
 * call: for `CursorCodec.encode`, which seals it at once (the cipher copies what it reads).
 */
export function packShared(position: CursorPosition): Buffer {
  const { ref, next, size } = position;
  // Each reference is used up to `refEnd` / `nextEnd`: shorter when its page_size suffix is dropped.
  const refEnd = ref === null ? 0 : narrowedLength(ref, size);
  const nextEnd = next ? narrowedLength(next, size) : 0;
  // A page's last edge: `next` as what it does not share with the ref (`head` characters
  // at the start, `tail` at the end, never overlapping), when they share something.
  let head = 0;
  let tail = 0;
  if (ref !== null && next) {
    const most = Math.min(refEnd, nextEnd);
    while (head < most && ref.charCodeAt(head) === next.charCodeAt(head)) head += 1;
    while (tail < most - head && ref.charCodeAt(refEnd - 1 - tail) === next.charCodeAt(nextEnd - 1 - tail)) tail += 1;
    // Never split a surrogate pair: the middle is written as UTF-8.
    if (head > 0 && isHighSurrogate(next.charCodeAt(head - 1))) head -= 1;
    if (tail > 0 && isHighSurrogate(next.charCodeAt(nextEnd - tail - 1))) tail -= 1;
  }
  const useDelta = head + tail > 0;
  const flags =
    (ref !== null ? HAS_REF : 0) |
    (next ? HAS_NEXT : 0) |
    (ref !== null && refEnd < ref.length ? REF_SIZED : 0) |
    (next && nextEnd < next.length ? NEXT_SIZED : 0) |
    (useDelta ? NEXT_DELTA : 0);
  writer.start();
  writer.byte(flags);
  writer.varint(size);
  writer.varint(position.index);
  writer.text(position.id);
  if (ref !== null) writer.reference(ref, 0, refEnd);
  if (next && useDelta) {
    writer.varint(head);
    writer.varint(tail);
    writer.reference(next, head, nextEnd - tail);
  } else if (next) writer.reference(next, 0, nextEnd);
  return writer.view();
}

/** The compact bytes of `position`, a buffer of their own. */
export function pack(position: CursorPosition): Buffer {
  return Buffer.from(packShared(position));
}

export function unpack(plain: Buffer): CursorPosition {
  const flags = plain[0];
  if (flags === undefined) throw new RangeError('empty');
  const body = flags & DEFLATED ? new Reader(inflateRawSync(plain.subarray(1), { maxOutputLength: MAX_PLAIN_BYTES, windowBits: 9 }), 0) : new Reader(plain, 1);
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
  return next === undefined ? { ref, size, index, id } : { ref, size, index, id, next };
}
