import { parsePageReference, pageUrl, sentPageSize } from '../../src/upstream/pageReference';
import { UpstreamError } from '../../src/upstream/errors';

const apiBase = 'https://shard-1.example.com';
const path = '/api/public/v1/locations/';

function refusal(raw: unknown): string {
  try {
    parsePageReference(raw, apiBase, path);
  } catch (error) {
    expect(error).toBeInstanceOf(UpstreamError);
    return (error as UpstreamError).code;
  }
  throw new Error('expected a refusal');
}

describe('page references (docs/upstream.md, "Page references": all three formats)', () => {
  it('keeps only the query of an absolute URL on the same origin and path', () => {
    expect(parsePageReference(`${apiBase}${path}?cursor=abc&page_size=100`, apiBase, path)).toBe('cursor=abc&page_size=100');
  });

  it('resolves a path-relative URL against the list path', () => {
    expect(parsePageReference(`${path}?page=3`, apiBase, path)).toBe('page=3');
    expect(parsePageReference('?page=4', apiBase, path)).toBe('page=4');
    expect(parsePageReference('./?page=5', apiBase, path)).toBe('page=5');
  });

  it('resolves a relative URL without a leading slash against the origin when that names the list', () => {
    expect(parsePageReference('api/public/v1/locations/?page=6', apiBase, path)).toBe('page=6');
  });

  it('takes a base64 token with slashes and padding as a bare token', () => {
    expect(parsePageReference('ab/cd+ef==', apiBase, path)).toBe('cursor=ab%2Fcd%2Bef%3D%3D');
  });

  it('takes a token with a colon as a bare token, sent only to the tenant shard', () => {
    expect(parsePageReference('v1:abc', apiBase, path)).toBe('cursor=v1%3Aabc');
  });

  it('sends a bare token back as the cursor parameter', () => {
    expect(parsePageReference('eyJvIjoxMH0=', apiBase, path)).toBe('cursor=eyJvIjoxMH0%3D');
    expect(new URL(pageUrl(apiBase, path, 'cursor=eyJvIjoxMH0%3D', 100)).searchParams.get('cursor')).toBe('eyJvIjoxMH0=');
  });

  it('treats null and an empty string as the end of the chain', () => {
    expect(parsePageReference(null, apiBase, path)).toBeNull();
    expect(parsePageReference('', apiBase, path)).toBeNull();
  });

  it.each([
    ['another origin', 'https://evil.example.net/api/public/v1/locations/?cursor=x'],
    ['another port', 'https://shard-1.example.com:8443/api/public/v1/locations/?cursor=x'],
    ['plain http on the same host', 'http://shard-1.example.com/api/public/v1/locations/?cursor=x'],
    ['a protocol-relative URL', '//evil.example.net/api/public/v1/locations/?cursor=x'],
    ['another list path', `${apiBase}/api/public/v1/shifts/?cursor=x`],
    ['a path trick', `${apiBase}/api/public/v1/locations/../../../admin/?x=1`],
    ['userinfo', 'https://user:pw@shard-1.example.com/api/public/v1/locations/?cursor=x'],
    ['a file URL', 'file:///etc/passwd'],
    ['a number', 42],
    ['blank', '   '],
    ['a very long string', 'x'.repeat(5000)],
  ])('refuses %s as UPSTREAM_BAD_RESPONSE', (_name, raw) => {
    expect(refusal(raw)).toBe('UPSTREAM_BAD_RESPONSE');
  });

  it.each([
    `${apiBase}${path}?cursor=abc&page_size=100`,
    `${path}?cursor=a-b_c.d*e`,
    `${path}?a=&b=1`,
    `${apiBase}${path}?page=2`,
    `${apiBase}:8443${path}?page=2`,
    `${apiBase}0${path}?page=2`,
    `${apiBase}${path}x?page=2`,
    `${apiBase}${path}?cursor=a%2Fb`,
    `${apiBase}${path}?cursor=a#frag`,
    `${apiBase}${path}?cursor=abc==`,
    `  ${path}?page=3  `,
  ])('reads %p as the WHATWG URL does: its query on this list and origin, else a refusal', (reference) => {
    const url = new URL(reference.trim(), `${apiBase}${path}`);
    if (url.origin === apiBase && url.pathname === path) expect(parsePageReference(reference, apiBase, path)).toBe(url.search.slice(1));
    else expect(refusal(reference)).toBe('UPSTREAM_BAD_RESPONSE');
  });

  it('always sends page_size, keeping one the reference carries', () => {
    expect(pageUrl(apiBase, path, null, 100)).toBe(`${apiBase}${path}?page_size=100`);
    expect(new URL(pageUrl(apiBase, path, 'cursor=a&page_size=50', 100)).searchParams.get('page_size')).toBe('50');
    expect(sentPageSize(pageUrl(apiBase, path, 'cursor=a&page_size=50', 100))).toBe(50);
    expect(sentPageSize(pageUrl(apiBase, path, 'cursor=a%2Fb&page%5Fsize=25', 100))).toBe(25);
    expect(sentPageSize(pageUrl(apiBase, path, 'cursor=a', 100))).toBe(100);
  });

  /** What pageUrl wrote before it wrote plain references by concatenation: the WHATWG URL's text for every reference. */
  function throughUrl(ref: string | null, pageSize: number): string {
    const url = new URL(path, apiBase);
    if (ref) url.search = ref;
    if (!url.searchParams.has('page_size')) url.searchParams.set('page_size', String(pageSize));
    return url.href;
  }

  it.each([
    null,
    '',
    'cursor=abc',
    'cursor=abc&page_size=50',
    'page=2',
    'cursor=a-b_c.d*e',
    'a=&b=1',
    'cursor=eyJvIjoxMH0%3D',
    'cursor=ab%2Fcd%2Bef%3D%3D',
    'cursor=a+b',
    'cursor=a~b',
    'cursor=abc==',
    'cursor=a%20b&page%5Fsize=7',
    'x=%C3%A9t%C3%A9',
    'cursor=a&&b=c',
    'flag',
  ])('writes the same URL for %p as the WHATWG URL does', (ref) => {
    expect(pageUrl(apiBase, path, ref, 100)).toBe(throughUrl(ref, 100));
    expect(sentPageSize(pageUrl(apiBase, path, ref, 100))).toBe(Number(new URL(throughUrl(ref, 100)).searchParams.get('page_size')));
  });
});
