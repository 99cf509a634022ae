import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** One company's client credentials, from WFS_TENANTS_FILE. */
export interface TenantCredentials {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Space-separated scopes to request, e.g. `shifts.read`. */
  readonly scope: string;
}

export interface JwtIdentityConfig {
  readonly jwksUrl: string;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
  readonly tenantClaim: string;
}

/** The whole configuration, read once from the environment and frozen. */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** Unset: demo mode, on the embedded emulator. */
  readonly authUrl: string | null;
  readonly tenants: readonly TenantCredentials[];
  readonly tenantHeader: string;
  readonly jwt: JwtIdentityConfig | null;
  readonly routerSecret: string | null;
  readonly redisUrl: string | null;
  readonly cursorSecret: Buffer;
  /** True when WFS_CURSOR_SECRET was not set and a random one was drawn. */
  readonly cursorSecretGenerated: boolean;
  readonly apiBaseAllow: readonly string[];
  /** Serve the browser explorer at `/` (default: on unless NODE_ENV=production). */
  readonly explorer: boolean;
  /** Answer introspection queries (default: on unless NODE_ENV=production). */
  readonly introspection: boolean;
  readonly logLevel: string;
}

/** A configuration problem: `index.ts` prints the message as one line and exits 1. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * The only reader of `process.env`. Every check happens here, up front, so a bad
 * value stops start-up with a line that names the variable.
 */
export function loadConfig(env: Env = process.env): Config {
  const authUrl = optionalUrl(env, 'WFS_AUTH_URL');
  const tenantsFile = nonEmpty(env.WFS_TENANTS_FILE);
  if (authUrl && !tenantsFile) {
    throw new ConfigError('WFS_TENANTS_FILE', 'required when WFS_AUTH_URL is set (a JSON array of { tenantId, clientId, clientSecret, scope })');
  }
  const cursorSecretText = nonEmpty(env.WFS_CURSOR_SECRET);
  if (cursorSecretText !== undefined && cursorSecretText.length < 32) {
    throw new ConfigError('WFS_CURSOR_SECRET', 'must be at least 32 characters (for example `openssl rand -hex 32`)');
  }
  const logLevel = nonEmpty(env.LOG_LEVEL) ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const routerSecret = nonEmpty(env.WFS_ROUTER_SECRET) ?? null;
  if (routerSecret !== null && routerSecret.length < 16) {
    throw new ConfigError('WFS_ROUTER_SECRET', 'must be at least 16 characters');
  }
  const config: Config = {
    port: port(env.PORT),
    host: nonEmpty(env.HOST) ?? '127.0.0.1',
    authUrl,
    tenants: authUrl && tenantsFile ? readTenantsFile(tenantsFile) : [],
    tenantHeader: (nonEmpty(env.WFS_TENANT_HEADER) ?? 'x-tenant-id').toLowerCase(),
    jwt: jwtConfig(env),
    routerSecret,
    redisUrl: redisUrl(env.WFS_REDIS_URL),
    cursorSecret: cursorSecretText ? Buffer.from(cursorSecretText, 'utf8') : randomBytes(32),
    cursorSecretGenerated: cursorSecretText === undefined,
    apiBaseAllow: (nonEmpty(env.WFS_API_BASE_ALLOW) ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    explorer: flag(env, 'WFS_EXPLORER', env.NODE_ENV !== 'production'),
    introspection: flag(env, 'WFS_INTROSPECTION', env.NODE_ENV !== 'production'),
    logLevel,
  };
  return Object.freeze(config);
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function port(value: string | undefined): number {
  const text = nonEmpty(value);
  if (text === undefined) return 4001;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535) throw new ConfigError('PORT', `must be a port number from 0 to 65535, got "${text}"`);
  return n;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const text = nonEmpty(env[name])?.toLowerCase();
  if (text === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  if (['0', 'false', 'no', 'off'].includes(text)) return false;
  throw new ConfigError(name, `must be true or false, got "${text}"`);
}

function optionalUrl(env: Env, name: string): string | null {
  const text = nonEmpty(env[name]);
  if (text === undefined) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL, got "${text}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(name, 'must be an http(s) URL');
  if (url.username || url.password) throw new ConfigError(name, 'must not carry credentials in the URL');
  return text.replace(/\/+$/, '');
}

function redisUrl(value: string | undefined): string | null {
  const text = nonEmpty(value);
  if (text === undefined) return null;
  if (!/^rediss?:\/\//.test(text)) throw new ConfigError('WFS_REDIS_URL', 'must start with redis:// or rediss://');
  return text;
}

function jwtConfig(env: Env): JwtIdentityConfig | null {
  const jwksUrl = optionalUrl(env, 'WFS_JWKS_URL');
  if (!jwksUrl) {
    for (const name of ['WFS_JWT_ISSUER', 'WFS_JWT_AUDIENCE', 'WFS_TENANT_CLAIM']) {
      if (nonEmpty(env[name])) throw new ConfigError(name, 'is set but WFS_JWKS_URL is not; set WFS_JWKS_URL to use verified-identity mode');
    }
    return null;
  }
  return {
    jwksUrl,
    issuer: nonEmpty(env.WFS_JWT_ISSUER),
    audience: nonEmpty(env.WFS_JWT_AUDIENCE),
    tenantClaim: nonEmpty(env.WFS_TENANT_CLAIM) ?? 'tenant_id',
  };
}

function readTenantsFile(path: string): TenantCredentials[] {
  const fail = (problem: string): never => {
    throw new ConfigError('WFS_TENANTS_FILE', `${path}: ${problem}`);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail(code ? `cannot read the file (${code})` : 'is not valid JSON');
  }
  if (!Array.isArray(parsed) || parsed.length === 0) return fail('must be a non-empty JSON array of { tenantId, clientId, clientSecret, scope }');
  const seen = new Set<string>();
  return parsed.map((entry: unknown, index) => {
    const item = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const field = (name: string, required: boolean): string => {
      const value = item[name];
      if (!required && (value === undefined || value === '')) return '';
      if (typeof value !== 'string' || value.trim() === '') return fail(`entry ${index}: "${name}" must be a non-empty string`);
      return value.trim();
    };
    const tenant = {
      tenantId: field('tenantId', true),
      clientId: field('clientId', true),
      clientSecret: field('clientSecret', true),
      scope: field('scope', false).split(/\s+/).filter(Boolean).join(' '),
    };
    if (seen.has(tenant.tenantId)) fail(`entry ${index}: tenantId "${tenant.tenantId}" appears twice`);
    seen.add(tenant.tenantId);
    return Object.freeze(tenant);
  });
}
