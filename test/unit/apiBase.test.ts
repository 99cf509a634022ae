import { checkApiBase } from '../../src/upstream/apiBase';
import { UpstreamError } from '../../src/upstream/errors';

function code(value: unknown, allow: string[] = []): string {
  try {
    checkApiBase(value, allow);
    return 'accepted';
  } catch (error) {
    return (error as UpstreamError).code;
  }
}

describe('api_base claim checks', () => {
  it('accepts an https origin and normalises it', () => {
    expect(checkApiBase('https://Shard-2.Example.com/')).toBe('https://shard-2.example.com');
  });

  it('accepts plain http only on loopback', () => {
    expect(checkApiBase('http://127.0.0.1:4011')).toBe('http://127.0.0.1:4011');
    expect(checkApiBase('http://localhost:4011')).toBe('http://localhost:4011');
    expect(checkApiBase('http://[::1]:4011')).toBe('http://[::1]:4011');
    expect(code('http://shard.example.com')).toBe('UPSTREAM_MISCONFIGURED');
    expect(code('http://10.0.0.5')).toBe('UPSTREAM_MISCONFIGURED');
  });

  it.each([
    'ftp://shard.example.com',
    'https://user:pass@shard.example.com',
    'https://shard.example.com/tenant/a',
    'https://shard.example.com/?x=1',
    'https://shard.example.com/#frag',
    'https://shard.example.com/%2e%2e%2f',
    'file:///etc/passwd',
    'not a url',
    '',
    null,
    42,
  ])('refuses %p', (value) => {
    expect(code(value)).toBe('UPSTREAM_MISCONFIGURED');
  });

  it('honours the allow-list when one is configured', () => {
    expect(code('https://eu-1.wfs.example.com', ['*.wfs.example.com'])).toBe('accepted');
    expect(code('https://eu-1.wfs.example.com', ['api.example.com'])).toBe('UPSTREAM_MISCONFIGURED');
    expect(code('https://wfs.example.com.evil.net', ['*.wfs.example.com'])).toBe('UPSTREAM_MISCONFIGURED');
    expect(code('http://127.0.0.1:4011', ['127.0.0.1:4011'])).toBe('accepted');
  });
});
