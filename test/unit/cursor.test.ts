import { GraphQLError } from 'graphql';
import { CursorCodec } from '../../src/graphql/cursor';

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
    const cursor = codec.encode('t1', 'locations', position);
    expect(codec.decode(cursor, 't1', 'locations', 'after')).toEqual(position);
  });

  it('refuses a cursor of another tenant, another list, or another key', () => {
    const cursor = codec.encode('t1', 'locations', position);
    expect(errorCode(() => codec.decode(cursor, 't2', 'locations', 'after'))).toBe('BAD_USER_INPUT');
    expect(errorCode(() => codec.decode(cursor, 't1', 'shifts', 'after'))).toBe('BAD_USER_INPUT');
    const other = new CursorCodec(Buffer.from('o'.repeat(32)));
    expect(errorCode(() => other.decode(cursor, 't1', 'locations', 'after'))).toBe('BAD_USER_INPUT');
  });

  it('refuses tampered and made-up cursors', () => {
    const cursor = codec.encode('t1', 'locations', position);
    const [body, signature] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify({ t: 't1', l: 'locations', r: null, s: 100, i: 0, d: 'x' })).toString('base64url');
    expect(errorCode(() => codec.decode(`${forged}.${signature}`, 't1', 'locations', 'after'))).toBe('BAD_USER_INPUT');
    expect(errorCode(() => codec.decode(`${body}.${signature!.slice(0, -2)}AA`, 't1', 'locations', 'after'))).toBe('BAD_USER_INPUT');
    for (const junk of ['', 'abc', 'a.b.c', '....', 'YXJyYXljb25uZWN0aW9uOjE=']) {
      expect(errorCode(() => codec.decode(junk, 't1', 'locations', 'after'))).toBe('BAD_USER_INPUT');
    }
  });
});
