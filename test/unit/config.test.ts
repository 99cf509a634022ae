import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

const dir = mkdtempSync(join(tmpdir(), 'wfs-config-'));
function tenantsFile(content: unknown): string {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}
const good = [{ tenantId: 't1', clientId: 'c1', clientSecret: 'super-secret-value', scope: 'shifts.read' }];

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
    [{ WFS_REDIS_URL: 'http://redis' }, 'WFS_REDIS_URL'],
    [{ WFS_CURSOR_SECRET: 'short' }, 'WFS_CURSOR_SECRET'],
    [{ WFS_JWT_ISSUER: 'https://issuer' }, 'WFS_JWT_ISSUER'],
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
    expect(loadConfig({ WFS_JWKS_URL: 'https://id.example.com/jwks.json' }).jwt).toEqual({
      jwksUrl: 'https://id.example.com/jwks.json', issuer: undefined, audience: undefined, tenantClaim: 'tenant_id',
    });
  });
});
