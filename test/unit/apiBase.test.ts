import { checkApiBase } from '../../src/upstream/transport/apiBase';
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

  it('in production (loopback off) refuses a loopback host unless the allow-list names it', () => {
    const production = (value: string, allow: string[] = []) => {
      try {
        return checkApiBase(value, allow, false);
      } catch (error) {
        return (error as UpstreamError).code;
      }
    };
    for (const value of ['http://127.0.0.1:4011', 'https://127.0.0.1', 'http://localhost:4011', 'https://api.localhost', 'http://[::1]:4011', 'https://[::ffff:127.0.0.1]']) {
      expect({ value, result: production(value) }).toEqual({ value, result: 'UPSTREAM_MISCONFIGURED' });
    }
    expect(production('http://127.0.0.1:4011', ['127.0.0.1'])).toBe('http://127.0.0.1:4011');
    expect(production('http://localhost:4011', ['localhost:4011'])).toBe('http://localhost:4011');
    expect(production('https://shard.example.com')).toBe('https://shard.example.com');
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

describe('api_base addresses: private networks refused (no allow-list)', () => {
  it.each([
    ['cloud metadata', 'https://169.254.169.254'],
    ['metadata as a decimal number', 'https://2852039166'],
    ['metadata in hex', 'https://0xA9FEA9FE'],
    ['metadata in octal', 'https://0251.0376.0251.0376'],
    ['metadata, mixed short form', 'https://169.254.43518'],
    ['10/8', 'https://10.0.0.1'],
    ['10/8 short form', 'https://10.1'],
    ['172.16/12', 'https://172.16.5.4'],
    ['192.168/16', 'https://192.168.1.1'],
    ['shared address space 100.64/10', 'https://100.64.0.1'],
    ['unspecified', 'https://0.0.0.0'],
    ['broadcast', 'https://255.255.255.255'],
    ['multicast', 'https://224.0.0.1'],
    ['documentation (TEST-NET-1)', 'https://192.0.2.1'],
    ['documentation (TEST-NET-2)', 'https://198.51.100.7'],
    ['documentation (TEST-NET-3)', 'https://203.0.113.9'],
    ['benchmark 198.18/15', 'https://198.18.0.1'],
    ['reserved 240/4', 'https://240.0.0.1'],
    ['EC2 IPv6 metadata', 'https://[fd00:ec2::254]'],
    ['IPv6 link-local', 'https://[fe80::1]'],
    ['IPv6 unique local', 'https://[fc00::1]'],
    ['IPv6 unspecified', 'https://[::]'],
    ['IPv6 multicast', 'https://[ff02::1]'],
    ['IPv6 documentation', 'https://[2001:db8::1]'],
    ['IPv6 benchmark', 'https://[2001:2::1]'],
    ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]'],
    ['IPv4-mapped metadata (hex)', 'https://[::ffff:a9fe:a9fe]'],
    ['IPv4-compatible private', 'https://[::10.0.0.1]'],
    ['NAT64 private', 'https://[64:ff9b::a00:1]'],
    ['NAT64 metadata', 'https://[64:ff9b::169.254.169.254]'],
    ['local-use NAT64', 'https://[64:ff9b:1::a00:1]'],
  ])('refuses %s (%s) with UPSTREAM_MISCONFIGURED', (_name, value) => {
    expect(code(value)).toBe('UPSTREAM_MISCONFIGURED');
  });

  it.each(['https://8.8.8.8', 'https://[2606:4700:4700::1111]', 'https://[64:ff9b::808:808]', 'http://127.0.0.1:4011', 'http://[::1]:4011', 'https://shard.example.com'])(
    'accepts a public or loopback address: %s',
    (value) => {
      expect(code(value)).toBe('accepted');
    },
  );

  it('lets operators name private hosts and ranges, but never metadata addresses', () => {
    expect(code('https://10.0.0.1', ['10.0.0.0/8'])).toBe('accepted');
    expect(code('https://10.0.0.1', ['10.0.0.1'])).toBe('accepted');
    expect(code('https://[fd12::5]', ['fd12::/16'])).toBe('accepted');
    expect(code('https://192.168.1.1', ['10.0.0.0/8'])).toBe('UPSTREAM_MISCONFIGURED');
    expect(code('https://169.254.169.254', ['169.254.0.0/16'])).toBe('UPSTREAM_MISCONFIGURED');
    expect(code('https://169.254.169.254', ['169.254.169.254'])).toBe('UPSTREAM_MISCONFIGURED');
    expect(code('https://[fd00:ec2::254]', ['fd00::/8'])).toBe('UPSTREAM_MISCONFIGURED');
  });

  it('names no server configuration in its message (it reaches API clients)', () => {
    try {
      checkApiBase('https://eu-1.wfs.example.com', ['api.example.com']);
    } catch (error) {
      expect((error as Error).message).not.toMatch(/WFS_/);
    }
    expect.assertions(1);
  });
});
