import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, KNOWN_ENV_VARIABLES, loadConfig, UPSTREAM_SETTINGS } from '../../src/config';
import { TENANT } from '../helpers/fixtures';

const dir = mkdtempSync(join(tmpdir(), 'wfs-config-'));
function tenantsFile(content: unknown): string {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}
const good = [{ ...TENANT, clientSecret: 'super-secret-value' }];
const upstream = () => ({ WFS_AUTH_URL: 'https://id.example.com', WFS_TENANTS_FILE: tenantsFile(good) });
const CURSOR_SECRET = 'c7e2a91f0b4d4e8a9f3c6b1d2e0a7f5c';
const REDIS_KEY = '5d0e8b3a1f7c4a29b6e1d0c9f8a7b2e4';
const ROUTER_SECRET = 'a81f3c9e0d2b4f6a';
const jwt = { WFS_JWKS_URL: 'https://id.example.com/jwks.json', WFS_JWT_ISSUER: 'https://id.example.com', WFS_JWT_AUDIENCE: 'wfs-subgraph' };

function failure(env: Record<string, string>): { variable: string; message: string } {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return { variable: (error as ConfigError).variable, message: (error as ConfigError).message };
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('defaults to demo mode on port 4001', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 4001, authUrl: null, tenantHeader: 'x-tenant-id', jwt: null, redisUrl: null, cursorSecretGenerated: true });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads the tenants file and keeps a path prefix of the auth URL', () => {
    const config = loadConfig({ WFS_AUTH_URL: 'https://id.example.com/tenant-gw/', WFS_TENANTS_FILE: tenantsFile(good) });
    expect(config.authUrl).toBe('https://id.example.com/tenant-gw');
    expect(config.tenants).toEqual(good);
  });

  it.each([
    [{ WFS_AUTH_URL: 'https://id.example.com' }, 'WFS_TENANTS_FILE'],
    [{ WFS_AUTH_URL: 'not a url', WFS_TENANTS_FILE: 'x' }, 'WFS_AUTH_URL'],
    [{ PORT: 'eighty' }, 'PORT'],
    [{ ...upstream(), WFS_REDIS_URL: 'http://redis' }, 'WFS_REDIS_URL'],
    [{ WFS_CURSOR_SECRET: 'short' }, 'WFS_CURSOR_SECRET'],
    [{ ...upstream(), WFS_JWT_ISSUER: 'https://issuer' }, 'WFS_JWT_ISSUER'],
    [{ WFS_EXPLORER: 'maybe' }, 'WFS_EXPLORER'],
  ])('names the variable that is wrong: %p', (env, variable) => {
    expect(failure(env as Record<string, string>).variable).toBe(variable);
  });

  it.each([
    ['missing file', join(dir, 'nope.json')],
    ['invalid JSON', '{'],
    ['not an array', { tenantId: 't' }],
    ['missing secret', [{ tenantId: 't', clientId: 'c' }]],
    ['duplicate tenant', [...good, ...good]],
  ])('refuses a tenants file with %s, without echoing secrets', (_name, content) => {
    const path = typeof content === 'string' && content.startsWith('/') ? content : tenantsFile(content);
    const { variable, message } = failure({ WFS_AUTH_URL: 'https://id.example.com', WFS_TENANTS_FILE: path });
    expect(variable).toBe('WFS_TENANTS_FILE');
    expect(message).not.toContain('super-secret-value');
  });

  it('enables verified-identity mode with the default claim', () => {
    expect(loadConfig({ ...upstream(), ...jwt }).jwt).toEqual({
      jwksUrl: 'https://id.example.com/jwks.json', issuer: 'https://id.example.com', audience: 'wfs-subgraph', tenantClaim: 'tenant_id',
    });
  });

  it('refuses verified-identity mode without an issuer or an audience, unless the audience is opted out explicitly', () => {
    expect(failure({ ...upstream(), ...jwt, WFS_JWT_ISSUER: '' }).variable).toBe('WFS_JWT_ISSUER');
    expect(failure({ ...upstream(), ...jwt, WFS_JWT_AUDIENCE: '' }).variable).toBe('WFS_JWT_AUDIENCE');
    expect(loadConfig({ ...upstream(), ...jwt, WFS_JWT_AUDIENCE: '', WFS_JWT_NO_AUDIENCE: 'true' }).jwt?.audience).toBeUndefined();
    expect(failure({ ...upstream(), ...jwt, WFS_JWT_NO_AUDIENCE: 'true' }).variable).toBe('WFS_JWT_NO_AUDIENCE');
  });

  it.each([
    ['WFS_AUTH_URL', 'http://id.example.com'],
    ['WFS_AUTH_URL', 'http://10.0.0.5:8080'],
    ['WFS_JWKS_URL', 'http://id.example.com/jwks.json'],
  ])('refuses plain http off loopback for %s (%s)', (variable, url) => {
    const { variable: named, message } = failure({ ...upstream(), ...jwt, [variable]: url });
    expect(named).toBe(variable);
    expect(message).toMatch(/https/);
  });

  it('accepts plain http on a loopback host', () => {
    for (const host of ['127.0.0.1:8080', 'localhost:8080', '[::1]:8080']) {
      expect(loadConfig({ ...upstream(), WFS_AUTH_URL: `http://${host}` }).authUrl).toBe(`http://${host}`);
    }
  });

  it('stops on an unknown WFS_* variable and names the closest known one', () => {
    const { variable, message } = failure({ NODE_ENV: 'production', WFS_AUTH_ULR: 'https://id.example.com', WFS_TENANTS_FILE: tenantsFile(good) });
    expect(variable).toBe('WFS_AUTH_ULR');
    expect(message).toContain('did you mean WFS_AUTH_URL?');
    expect(failure({ WFS_TENANTS_FLE: 'x' }).message).toContain('WFS_TENANTS_FILE');
    // Other prefixes are not ours to judge.
    expect(() => loadConfig({ OTEL_SERVICE_NAME: 'x', WFSX: 'y' })).not.toThrow();
  });

  it('reads the upstream attempt timeout and the Retry-After caps, with their defaults and bounds', () => {
    expect(loadConfig({})).toMatchObject({ upstreamAttemptTimeoutMs: 8_000, shardRetryAfterMaxSeconds: 60, tenantRetryAfterMaxSeconds: 300 });
    expect(loadConfig({ WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS: '250', WFS_SHARD_RETRY_AFTER_MAX_S: '30', WFS_TENANT_RETRY_AFTER_MAX_S: '120' })).toMatchObject({
      upstreamAttemptTimeoutMs: 250,
      shardRetryAfterMaxSeconds: 30,
      tenantRetryAfterMaxSeconds: 120,
    });
    expect(failure({ WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS: '20000' })).toEqual({ variable: 'WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS', message: expect.stringContaining('from 1 to 15000') });
    expect(failure({ WFS_SHARD_RETRY_AFTER_MAX_S: '0' }).variable).toBe('WFS_SHARD_RETRY_AFTER_MAX_S');
    expect(failure({ WFS_TENANT_RETRY_AFTER_MAX_S: 'soon' }).variable).toBe('WFS_TENANT_RETRY_AFTER_MAX_S');
  });

  it('keeps one exported list of known names, including those other modules read', () => {
    expect(KNOWN_ENV_VARIABLES).toEqual(expect.arrayContaining(['WFS_INTROSPECTION', 'WFS_UPSTREAM_CALL_BUDGET', 'WFS_REDIS_KEY', 'WFS_DEMO', 'WFS_JWT_NO_AUDIENCE']));
  });

  it("bounds a company's distinct live filters by WFS_LIVE_FILTERS_PER_COMPANY (default 1 000, at most its 1 000 subscriptions), in limits.live", () => {
    expect(loadConfig({}).limits.live.filtersPerCompany).toBe(1_000);
    const config = loadConfig({ WFS_LIVE_FILTERS_PER_COMPANY: '250' });
    expect(config.limits.live).toEqual({ ...loadConfig({}).limits.live, filtersPerCompany: 250 });
    expect(Object.isFrozen(config.limits.live)).toBe(true);
    expect(failure({ WFS_LIVE_FILTERS_PER_COMPANY: '1001' })).toEqual({ variable: 'WFS_LIVE_FILTERS_PER_COMPANY', message: expect.stringContaining('from 1 to 1000') });
    expect(failure({ WFS_LIVE_FILTERS_PER_COMPANY: '0' }).variable).toBe('WFS_LIVE_FILTERS_PER_COMPANY');
  });

  it('bounds the entity indexes by WFS_ENTITY_INDEX_MAX_RECORDS and WFS_ENTITY_INDEX_TTL_SECONDS', () => {
    expect(loadConfig({})).toMatchObject({ entityIndexMaxRecords: 200_000, entityIndexTtlSeconds: 30 });
    expect(loadConfig({ WFS_ENTITY_INDEX_MAX_RECORDS: '50000', WFS_ENTITY_INDEX_TTL_SECONDS: '10' })).toMatchObject({ entityIndexMaxRecords: 50_000, entityIndexTtlSeconds: 10 });
    expect(failure({ WFS_ENTITY_INDEX_MAX_RECORDS: '0' }).variable).toBe('WFS_ENTITY_INDEX_MAX_RECORDS');
    expect(failure({ WFS_ENTITY_INDEX_TTL_SECONDS: '30s' }).variable).toBe('WFS_ENTITY_INDEX_TTL_SECONDS');
  });

  it('reads the freshness window (0 by default), and lets the entity index follow it', () => {
    expect(loadConfig({})).toMatchObject({ freshnessSeconds: 0, entityIndexTtlSeconds: 30 });
    expect(loadConfig({ WFS_FRESHNESS_SECONDS: '5' })).toMatchObject({ freshnessSeconds: 5, entityIndexTtlSeconds: 5 });
    expect(loadConfig({ WFS_FRESHNESS_SECONDS: '300' })).toMatchObject({ freshnessSeconds: 300, entityIndexTtlSeconds: 300 });
    // The index's own setting can shorten the window's lifetime, never lengthen it.
    expect(loadConfig({ WFS_FRESHNESS_SECONDS: '300', WFS_ENTITY_INDEX_TTL_SECONDS: '10' }).entityIndexTtlSeconds).toBe(10);
    expect(loadConfig({ WFS_FRESHNESS_SECONDS: '5', WFS_ENTITY_INDEX_TTL_SECONDS: '60' }).entityIndexTtlSeconds).toBe(5);
    expect(loadConfig({ WFS_FRESHNESS_SECONDS: '0', WFS_ENTITY_INDEX_TTL_SECONDS: '60' }).entityIndexTtlSeconds).toBe(60);
    for (const bad of ['-1', '3601', '5s']) expect(failure({ WFS_FRESHNESS_SECONDS: bad }).variable).toBe('WFS_FRESHNESS_SECONDS');
  });

  it('takes invalidation endpoints only with their key, and the key only with them', () => {
    const key = 'b7e1c9d2a4f60835';
    expect(loadConfig({})).toMatchObject({ cacheInvalidationUrls: [], cacheInvalidationKey: null });
    expect(loadConfig({ WFS_CACHE_INVALIDATION_URLS: 'http://router:4001/invalidation, https://hive.example.com/invalidate', WFS_CACHE_INVALIDATION_KEY: key })).toMatchObject({
      cacheInvalidationUrls: ['http://router:4001/invalidation', 'https://hive.example.com/invalidate'],
      cacheInvalidationKey: key,
    });
    expect(failure({ WFS_CACHE_INVALIDATION_URLS: 'http://router:4001/invalidation' }).variable).toBe('WFS_CACHE_INVALIDATION_KEY');
    expect(failure({ WFS_CACHE_INVALIDATION_KEY: key }).variable).toBe('WFS_CACHE_INVALIDATION_KEY');
    expect(failure({ WFS_CACHE_INVALIDATION_URLS: 'router:4001', WFS_CACHE_INVALIDATION_KEY: key }).variable).toBe('WFS_CACHE_INVALIDATION_URLS');
    expect(failure({ WFS_CACHE_INVALIDATION_URLS: 'http://user:pw@router/invalidation', WFS_CACHE_INVALIDATION_KEY: key }).variable).toBe('WFS_CACHE_INVALIDATION_URLS');
    expect(failure({ WFS_CACHE_INVALIDATION_URLS: 'http://router/i', WFS_CACHE_INVALIDATION_KEY: 'short' }).variable).toBe('WFS_CACHE_INVALIDATION_KEY');
    // The key is a secret: never in the message.
    expect(failure({ WFS_CACHE_INVALIDATION_KEY: key }).message).not.toContain(key);
  });

  it('runs demo mode only when asked for', () => {
    expect(loadConfig({}).demo).toBe(true);
    expect(failure({ NODE_ENV: 'production' }).variable).toBe('WFS_AUTH_URL');
    expect(loadConfig({ NODE_ENV: 'production', WFS_DEMO: 'true' }).demo).toBe(true);
    for (const setting of <Array<Record<string, string>>>[{ WFS_TENANTS_FILE: tenantsFile(good) }, { WFS_REDIS_URL: 'redis://r' }, jwt, { WFS_JWT_AUDIENCE: 'a' }, { WFS_API_BASE_ALLOW: 'x.example.com' }]) {
      const { variable, message } = failure(setting);
      expect(variable).toBe('WFS_AUTH_URL');
      expect(message).toContain(Object.keys(setting)[0]);
    }
    expect(failure({ ...upstream(), WFS_DEMO: 'true' }).variable).toBe('WFS_DEMO');
    expect(loadConfig(upstream()).demo).toBe(false);
  });

  it('stops a start-up without WFS_AUTH_URL for each upstream setting alone, WFS_JWT_NO_AUDIENCE and every WFS_JWT_* included', () => {
    // docs/configuration.md, "Demo mode": any of these set, alone, is a mistake, not demo mode.
    expect(UPSTREAM_SETTINGS).toEqual(expect.arrayContaining(KNOWN_ENV_VARIABLES.filter((name) => name.startsWith('WFS_JWT_'))));
    for (const name of UPSTREAM_SETTINGS) {
      const { variable, message } = failure({ [name]: name === 'WFS_JWT_NO_AUDIENCE' ? 'true' : 'x' });
      expect({ name, variable, names: message.includes(name) }).toEqual({ name, variable: 'WFS_AUTH_URL', names: true });
    }
  });

  it('needs WFS_REDIS_KEY (32+ characters) with WFS_REDIS_URL', () => {
    const redis = { WFS_REDIS_URL: 'redis://r', WFS_CURSOR_SECRET: CURSOR_SECRET };
    expect(failure({ ...upstream(), ...redis }).variable).toBe('WFS_REDIS_KEY');
    expect(failure({ ...upstream(), ...redis, WFS_REDIS_KEY: 'short' }).variable).toBe('WFS_REDIS_KEY');
    expect(failure({ ...upstream(), WFS_REDIS_KEY: REDIS_KEY }).variable).toBe('WFS_REDIS_KEY');
    expect(loadConfig({ ...upstream(), ...redis, WFS_REDIS_KEY: REDIS_KEY }).redisKey).toBe(REDIS_KEY);
  });

  it('reads WFS_REDIS_KEY_PREFIX (default wfs:), a name without glob characters, only with WFS_REDIS_URL', () => {
    const redis = { ...upstream(), WFS_REDIS_URL: 'redis://r', WFS_REDIS_KEY: REDIS_KEY, WFS_CURSOR_SECRET: CURSOR_SECRET };
    expect(loadConfig(redis).redisKeyPrefix).toBe('wfs:');
    expect(loadConfig({ ...redis, WFS_REDIS_KEY_PREFIX: 'wfs-blue:' }).redisKeyPrefix).toBe('wfs-blue:');
    for (const bad of ['wfs:*', 'a b', 'x'.repeat(65), 'wfs[1]:']) expect(failure({ ...redis, WFS_REDIS_KEY_PREFIX: bad }).variable).toBe('WFS_REDIS_KEY_PREFIX');
    expect(failure({ ...upstream(), WFS_REDIS_KEY_PREFIX: 'wfs-blue:' })).toEqual({ variable: 'WFS_REDIS_KEY_PREFIX', message: expect.stringContaining('WFS_REDIS_URL is not') });
  });

  it.each(['WFS_CURSOR_SECRET', 'WFS_REDIS_KEY', 'WFS_ROUTER_SECRET'])('refuses the shipped placeholder and made-up values as %s, naming it', (name) => {
    const env = { ...upstream(), WFS_REDIS_URL: 'redis://r', WFS_REDIS_KEY: REDIS_KEY, WFS_CURSOR_SECRET: CURSOR_SECRET };
    for (const value of ['replace-with-openssl-rand-hex-32', 'x'.repeat(40), 'abababababababababababababababab', 'changeme-0123456789abcdefghijklmnopq']) {
      const { variable, message } = failure({ ...env, [name]: value });
      expect({ variable, secretEchoed: message.includes(value) }).toEqual({ variable: name, secretEchoed: false });
    }
    expect(() => loadConfig({ ...env, [name]: 'b3f1c9a07d2e4c5f8a6b1d0e9c7f2a4b' })).not.toThrow();
  });

  it('needs WFS_CURSOR_SECRET in production and with WFS_REDIS_URL; draws a random one otherwise', () => {
    const production = { ...upstream(), NODE_ENV: 'production', WFS_ROUTER_SECRET: ROUTER_SECRET };
    expect(failure(production)).toEqual({ variable: 'WFS_CURSOR_SECRET', message: expect.stringContaining('NODE_ENV=production') });
    expect(failure({ ...upstream(), WFS_REDIS_URL: 'redis://r', WFS_REDIS_KEY: REDIS_KEY })).toEqual({ variable: 'WFS_CURSOR_SECRET', message: expect.stringContaining('WFS_REDIS_URL') });
    expect(loadConfig({ ...production, WFS_CURSOR_SECRET: CURSOR_SECRET }).cursorSecretGenerated).toBe(false);
    expect(loadConfig(upstream()).cursorSecretGenerated).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', WFS_DEMO: 'true' }).cursorSecretGenerated).toBe(true);
  });

  it('in production, trusted-header mode needs WFS_ROUTER_SECRET unless WFS_TRUSTED_NETWORK=true says so', () => {
    const production = { ...upstream(), NODE_ENV: 'production', WFS_CURSOR_SECRET: CURSOR_SECRET };
    const { variable, message } = failure(production);
    expect(variable).toBe('WFS_ROUTER_SECRET');
    expect(message).toContain('WFS_TRUSTED_NETWORK=true');
    expect(loadConfig({ ...production, WFS_TRUSTED_NETWORK: 'true' })).toMatchObject({ trustedNetwork: true, routerSecret: null });
    expect(loadConfig({ ...production, WFS_ROUTER_SECRET: ROUTER_SECRET }).routerSecret).toBe(ROUTER_SECRET);
    expect(loadConfig({ ...production, ...jwt }).jwt).not.toBeNull();
    expect(loadConfig({ NODE_ENV: 'production', WFS_DEMO: 'true' }).routerSecret).toBeNull();
    expect(loadConfig(upstream()).trustedNetwork).toBe(false);
  });

  it('accepts a loopback api_base without the allow-list only outside production (and in the demo)', () => {
    const production = { ...upstream(), NODE_ENV: 'production', WFS_CURSOR_SECRET: CURSOR_SECRET, WFS_ROUTER_SECRET: ROUTER_SECRET };
    expect(loadConfig(production).apiBaseLoopback).toBe(false);
    expect(loadConfig(upstream()).apiBaseLoopback).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', WFS_DEMO: 'true' }).apiBaseLoopback).toBe(true);
  });

  it('reads allow-list entries: hosts, suffixes, host:port and CIDR ranges', () => {
    expect(loadConfig({ ...upstream(), WFS_API_BASE_ALLOW: 'Shard.internal, *.example.com,10.0.0.0/8, fd12::/16, 127.0.0.1:4011' }).apiBaseAllow).toEqual([
      'shard.internal', '*.example.com', '10.0.0.0/8', 'fd12::/16', '127.0.0.1:4011',
    ]);
    expect(failure({ ...upstream(), WFS_API_BASE_ALLOW: '10.0.0.0/x' }).variable).toBe('WFS_API_BASE_ALLOW');
  });
});
