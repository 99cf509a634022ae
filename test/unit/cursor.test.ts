import { GraphQLError } from 'graphql';
import { deflateRawSync } from 'node:zlib';
import { CursorCodec } from '../../src/graphql/data/cursor';
import { pack, unpack } from '../../src/graphql/data/cursorPayload';
import { OTHER_TENANT_ID, TENANT_ID } from '../helpers/fixtures';

const codec = new CursorCodec(Buffer.from('k'.repeat(32)));
const position = { ref: 'cursor=abc&page_size=100', size: 100, index: 7, id: 'loc_7' };

function errorCode(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return (error as GraphQLError).extensions.code;
  }
  return 'no error';
}

describe('signed cursors', () => {
  it('round-trips a position for the same tenant and list', () => {
    const cursor = codec.encode(TENANT_ID, 'locations', position);
    expect(codec.decode(cursor, TENANT_ID, 'locations', 'after')).toEqual(position);
  });

  it('refuses a cursor of another tenant, another list, or another key', () => {
    const cursor = codec.encode(TENANT_ID, 'locations', position);
    expect(errorCode(() => codec.decode(cursor, OTHER_TENANT_ID, 'locations', 'after'))).toBe('BAD_USER_INPUT');
    expect(errorCode(() => codec.decode(cursor, TENANT_ID, 'shifts', 'after'))).toBe('BAD_USER_INPUT');
    const other = new CursorCodec(Buffer.from('o'.repeat(32)));
    expect(errorCode(() => other.decode(cursor, TENANT_ID, 'locations', 'after'))).toBe('BAD_USER_INPUT');
  });

  it('refuses tampered and made-up cursors', () => {
    const cursor = codec.encode(TENANT_ID, 'locations', position);
    const [body, signature] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify({ t: TENANT_ID, l: 'locations', r: null, s: 100, i: 0, d: 'x' })).toString('base64url');
    expect(errorCode(() => codec.decode(`${forged}.${signature}`, TENANT_ID, 'locations', 'after'))).toBe('BAD_USER_INPUT');
    expect(errorCode(() => codec.decode(`${body}.${signature!.slice(0, -2)}AA`, TENANT_ID, 'locations', 'after'))).toBe('BAD_USER_INPUT');
    for (const junk of ['', 'abc', 'a.b.c', '....', 'YXJyYXljb25uZWN0aW9uOjE=']) {
      expect(errorCode(() => codec.decode(junk, TENANT_ID, 'locations', 'after'))).toBe('BAD_USER_INPUT');
    }
  });
});

describe('sealed cursors', () => {
  const emulatorLike = `cursor=${Buffer.from(JSON.stringify({ l: 'shifts', t: 'aaaaaaaa-0000-4000-8000-000000000001', o: 300, s: 100 })).toString('base64url')}.${'Q'.repeat(16)}&page_size=100`;

  it.each([
    ['the first page', { ref: null, size: 20, index: 0, id: 'loc_1' }],
    ['an emulator-style reference', { ref: emulatorLike, size: 100, index: 42, id: 'shf_abc123_0042' }],
    ['a page end, with its next reference', { ref: emulatorLike, size: 100, index: 99, id: 'shf_9', next: emulatorLike.replace('MzAw', 'NDAw') }],
    ['a reference with odd characters and page_size elsewhere', { ref: 'page_size=25&after=%C3%A9t%C3%A9/+=&x=ÿ', size: 25, index: 3, id: '7' }],
    ['a reference that is only page_size', { ref: 'page_size=50', size: 50, index: 1, id: 'x' }],
    ['base64url runs that do not round-trip', { ref: 'cursor=abcdefghi&k=ABCDEFGHJ_-x', size: 100, index: 0, id: 'y' }],
  ])('round-trips %s', (_name, at) => {
    expect(codec.decode(codec.encode(TENANT_ID, 'shifts', at), TENANT_ID, 'shifts', 'after')).toEqual(at);
  });

  it('reveals neither the tenant, the list nor the upstream reference, and is compact', () => {
    const at = { ref: emulatorLike, size: 100, index: 42, id: 'shf_abc123_0042' };
    const cursor = codec.encode('aaaaaaaa-0000-4000-8000-000000000001', 'shifts', at);
    const decoded = Buffer.from(cursor.replace('.', ''), 'base64url').toString('latin1');
    for (const secret of ['aaaaaaaa', 'shifts', 'cursor=', 'shf_abc123', 'page_size']) expect(decoded).not.toContain(secret);
    expect(cursor.length).toBeLessThan(200);
    // Two cursors for one position differ (a fresh nonce each), so equal positions are not linkable.
    expect(codec.encode(TENANT_ID, 'shifts', at)).not.toBe(codec.encode(TENANT_ID, 'shifts', at));
  });

  it('binds the filter or parent: a cursor of one scope is refused under another', () => {
    const cursor = codec.encode(TENANT_ID, 'shifts', position, 'Location:loc_1|{}');
    expect(codec.decode(cursor, TENANT_ID, 'shifts', 'after', 'Location:loc_1|{}')).toEqual(position);
    expect(errorCode(() => codec.decode(cursor, TENANT_ID, 'shifts', 'after', 'Location:loc_2|{}'))).toBe('BAD_USER_INPUT');
    expect(errorCode(() => codec.decode(cursor, TENANT_ID, 'shifts', 'after'))).toBe('BAD_USER_INPUT');
  });

  it('refuses every single-character change', () => {
    const cursor = codec.encode(TENANT_ID, 'locations', position);
    for (let i = 0; i < cursor.length; i += 1) {
      const changed = cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1);
      expect(errorCode(() => codec.decode(changed, TENANT_ID, 'locations', 'after'))).toBe('BAD_USER_INPUT');
    }
  });
});

describe('the packed position of a page end', () => {
  const base = 'https://shard-7.example.test/api/v1/locations?cursor=eyJvIjozMDAsInMiOjEwMH0&sort=id&page_size=100';
  const next = base.replace('eyJvIjozMDAsInMiOjEwMH0', 'eyJvIjo0MDAsInMiOjEwMH0');

  it.each([
    ['a next that shares a start and an end with its ref', { ref: base, size: 100, index: 99, id: 'loc_99', next }],
    ['a next that shares nothing with its ref', { ref: 'a1', size: 100, index: 99, id: 'loc_99', next: 'zz' }],
    ['a next equal to its ref', { ref: base, size: 100, index: 99, id: 'loc_99', next: base }],
    ['a next inside its ref', { ref: 'abcabc', size: 100, index: 99, id: 'x', next: 'abc' }],
    ['a next that extends its ref', { ref: 'abc', size: 100, index: 99, id: 'x', next: 'abcabc' }],
    ['a difference beside a surrogate pair', { ref: 'p=\u{1F600}1\u{1F600}', size: 100, index: 99, id: 'x', next: 'p=\u{1F600}2\u{1F600}' }],
    ['a difference inside a surrogate pair', { ref: 'p=\u{1F600}', size: 100, index: 99, id: 'x', next: 'p=\u{1F601}' }],
  ])('round-trips %s', (_name, at) => {
    expect(unpack(pack(at))).toEqual(at);
    expect(codec.decode(codec.encode(TENANT_ID, 'locations', at), TENANT_ID, 'locations', 'after')).toEqual(at);
  });

  it('stores only what next does not share with the ref', () => {
    const end = pack({ ref: base, size: 100, index: 99, id: 'loc_99', next });
    const alone = pack({ ref: base, size: 100, index: 99, id: 'loc_99' });
    expect(end.length - alone.length).toBeLessThan(24);
  });

  it('opens a page end packed by an earlier version (raw-deflated), so a rolling upgrade breaks no paging', () => {
    // The earlier format: flags (HAS_REF | HAS_NEXT | REF_SIZED | NEXT_SIZED | DEFLATED), then the
    // raw-deflated body: size, index, id, and both references as one text segment each.
    const varint = (n: number) => (n < 0x80 ? [n] : [(n % 0x80) | 0x80, Math.floor(n / 0x80)]);
    const text = (value: string) => [...varint(Buffer.byteLength(value) * 2), ...Buffer.from(value)];
    const ref = 'offset=300';
    const later = 'offset=400';
    const body = Buffer.from([...varint(100), ...varint(99), ...varint(6), ...Buffer.from('loc_99'), ...text(ref), 0, ...text(later), 0]);
    const old = Buffer.concat([Buffer.of(1 | 2 | 4 | 8 | 128), deflateRawSync(body, { windowBits: 9, memLevel: 1 })]);
    expect(unpack(old)).toEqual({ ref: `${ref}&page_size=100`, size: 100, index: 99, id: 'loc_99', next: `${later}&page_size=100` });
  });
});
