import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { GraphQLError } from 'graphql';
import { CursorCodec as CurrentCodec } from '../../src/graphql/data/cursor';
import * as current from '../../src/graphql/data/cursorPayload';
import type { CursorPosition } from '../../src/graphql/data/cursorPayload';
import { badUserInput } from '../../src/graphql/errors';
import { OTHER_TENANT_ID, TENANT_ID } from '../helpers/fixtures';
import { seeded } from '../helpers/seeded';

/**
 * The cursor codec was rewritten for speed (one buffer written in place instead of a
 * Buffer per piece); cursors already held by clients must still open, and cursors of the
 * new code must open on a replica still running the old one during a rolling upgrade.
 * So the old `pack`/`unpack` and `CursorCodec` are kept below verbatim (only `export`
 * dropped) and compared with the current ones, byte for byte, over thousands of seeded
 * random positions.
 */

// ---- The first version, verbatim: src/graphql/data/cursorPayload.ts ----

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

function pack(position: CursorPosition): Buffer {
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

function unpack(plain: Buffer): CursorPosition {
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

// ---- The first version, verbatim: src/graphql/data/cursor.ts ----

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
class CursorCodec {
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

// ---- The comparisons ----

describe('the cursor codec against its first version', () => {
  const secret = Buffer.from('k'.repeat(32));
  const now = new CurrentCodec(secret);
  const before = new CursorCodec(secret);
  const positions = randomPositions(4_000, 0xc0ffee);

  it('packs every position into exactly the same bytes, which both versions unpack alike', () => {
    let deltas = 0;
    for (const position of positions) {
      const bytes = pack(position);
      expect(current.pack(position).equals(bytes)).toBe(true);
      expect(current.unpack(bytes)).toEqual(unpack(bytes));
      if (wellFormed(position) && !bareSuffix(position)) expect(current.unpack(bytes)).toEqual(normalized(position));
      if (bytes[0]! & 16) deltas += 1;
    }
    // The generator reaches the interesting branch often enough to count.
    expect(deltas).toBeGreaterThan(positions.length / 10);
  });

  it('unpacks what earlier versions deflated, and refuses damaged records, as the first version does', () => {
    const random = seeded(7);
    for (const position of positions.slice(0, 500)) {
      const bytes = pack(position);
      const deflated = Buffer.concat([Buffer.of(bytes[0]! | 128), deflateRawSync(bytes.subarray(1), { windowBits: 9, memLevel: 1 })]);
      expect(current.unpack(deflated)).toEqual(unpack(deflated));
      const damaged = Buffer.from(bytes);
      damaged[Math.floor(random() * damaged.length)] = Math.floor(random() * 256);
      const cut = damaged.subarray(0, Math.floor(random() * (damaged.length + 1)));
      expect(outcome(() => current.unpack(cut))).toEqual(outcome(() => unpack(cut)));
    }
  });

  it('opens cursors sealed by the first version, and the first version opens its cursors', () => {
    for (const position of positions.slice(0, 1_000)) {
      const scope = position.index % 3 === 0 ? `Location:${position.id}|{}` : '';
      const expected = unpack(pack(position));
      expect(now.decode(before.encode(TENANT_ID, 'shifts', position, scope), TENANT_ID, 'shifts', 'after', scope)).toEqual(expected);
      const sealed = now.encode(TENANT_ID, 'shifts', position, scope);
      expect(before.decode(sealed, TENANT_ID, 'shifts', 'after', scope)).toEqual(expected);
      expect(sealed.length).toBe(before.encode(TENANT_ID, 'shifts', position, scope).length);
    }
  });

  it('refuses exactly the cursors the first version refuses, with the same error', () => {
    const random = seeded(11);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ é';
    const cursors: unknown[] = ['', '.', 'abc', 'a.b.c', '....', 'YXJyYXljb25uZWN0aW9uOjE=', 'x'.repeat(9_000), 42, null];
    for (const position of positions.slice(0, 300)) {
      const cursor = before.encode(TENANT_ID, 'locations', position);
      const at = Math.floor(random() * cursor.length);
      const char = alphabet[Math.floor(random() * alphabet.length)]!;
      cursors.push(
        cursor,
        cursor.slice(0, at) + char + cursor.slice(at + 1), // one character changed
        cursor.slice(0, at) + char + cursor.slice(at), // one inserted
        cursor.slice(0, at) + cursor.slice(at + 1), // one removed
        cursor.slice(0, -1) + alphabet[Math.floor(random() * 64)], // another last character: spare bits
        `${cursor.slice(0, 16)}${cursor.slice(17)}`, // no dot
        `${cursor.slice(0, 15)}.${cursor.slice(17)}`, // a short nonce
        `${cursor.slice(0, 16)}.${cursor.slice(17, 17 + 16)}`, // no more than a tag
        `${cursor}.`,
        `${cursor}=`,
      );
    }
    let opened = 0;
    for (const cursor of cursors) {
      for (const [tenant, scope] of [[TENANT_ID, ''], [OTHER_TENANT_ID, ''], [TENANT_ID, 'x']] as const) {
        const expected = outcome(() => before.decode(cursor as string, tenant, 'locations', 'before', scope));
        expect(outcome(() => now.decode(cursor as string, tenant, 'locations', 'before', scope))).toEqual(expected);
        if (!(expected instanceof Error)) opened += 1;
      }
    }
    expect(opened).toBeGreaterThanOrEqual(300);
  });
});

/** What a call returns, or the error it throws (message and code), for comparing two versions. */
function outcome(call: () => unknown): unknown {
  try {
    return call();
  } catch (error) {
    return error instanceof GraphQLError ? new Error(`${String(error.extensions.code)}: ${error.message}`) : new Error('thrown');
  }
}

/** A position as it comes back: `next` absent when there is none. */
function normalized(position: CursorPosition): CursorPosition {
  const { next, ...rest } = position;
  return next ? { ...rest, next } : rest;
}

/** Whether every string of the position is well-formed UTF-16 (lone surrogates come back as U+FFFD, in both versions). */
function wellFormed(position: CursorPosition): boolean {
  return ![position.id, position.ref, position.next].some((value) => typeof value === 'string' && /\p{Surrogate}/u.test(value));
}

/**
 * Whether a reference is `&page_size=<size>` and nothing else: the format drops the suffix
 * and puts back `page_size=<size>` without the `&` (a quirk of the first version, kept so
 * that both versions read each other's bytes; no upstream writes such a reference).
 */
function bareSuffix(position: CursorPosition): boolean {
  return [position.ref, position.next].includes(`&page_size=${position.size}`);
}

/**
 * Positions as upstreams make them and stranger: ids and references of ASCII, accents,
 * CJK, surrogate pairs (and lone halves), base64url runs of every length (exact or with
 * stray bits), `page_size` suffixes equal to the size or not, empty strings, references
 * up to 2 048 characters, and a `next` that mostly differs from its ref in a middle.
 */
function randomPositions(count: number, seed: number): CursorPosition[] {
  const random = seeded(seed);
  const below = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[below(items.length)]!;
  const base64urlChars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const run = (length: number) => Array.from({ length }, () => pick([...base64urlChars])).join('');
  const exactRun = () => randomBytes(below(40)).toString('base64url');
  const piece = (): string =>
    pick([
      () => run(below(14)),
      () => run(below(40)),
      exactRun,
      () => pick(['cursor=', '&', '?', '/', '%C3%A9', '+', '=', '.', '~', ' ', 'page_size=', '&page_size=100', 'é', 'ÿ', '中文', '\u{1F600}', '\u{1F601}', '\uD83D', '\uDE00']),
      () => `https://shard-${below(9)}.example.test/api/v1/locations?`,
    ])();
  const text = (pieces: number) => Array.from({ length: pieces }, piece).join('');
  const sized = (value: string, size: number) =>
    pick([value, `${value}&page_size=${size}`, `${value}&page_size=${size + 1}`, `page_size=${size}`, `${value}page_size=${size}`]);
  // `next` as an upstream writes it: the ref with a middle changed (or not at all), or unrelated.
  const nextOf = (ref: string, size: number): string => {
    const from = below(ref.length + 1);
    const to = from + below(ref.length - from + 1);
    return pick([
      () => ref.slice(0, from) + text(below(3)) + ref.slice(to),
      () => ref.slice(0, from) + pick(['\u{1F601}', '\uDE01', '1']) + ref.slice(from),
      () => ref,
      () => sized(text(below(6)), size),
      () => '',
    ])();
  };
  const positions: CursorPosition[] = [];
  for (let i = 0; i < count; i += 1) {
    const size = pick([1, 10, 100, 127, 128, 1_000, 16_384, 2 ** 31 + 5, 2 ** 40 + 3, below(2_000) + 1]);
    const index = below(2) === 0 ? size - 1 : below(Math.min(size, 1_000_000));
    const id = pick([() => '', () => `loc_${String(i).padStart(16, '0')}`, () => text(below(4)), () => run(below(64))])();
    const long = below(20) === 0;
    const ref = below(8) === 0 ? null : sized(long ? text(300).slice(0, 2_048) : text(below(8)), size);
    const next = ref === null ? pick([undefined, null, sized(text(below(6)), size)]) : pick([undefined, null, nextOf(ref, size), nextOf(ref, size), nextOf(ref, size)]);
    positions.push({ ref, size, index, id, ...(next !== undefined && { next }) });
  }
  return positions;
}
