import { readFileSync } from 'node:fs';
import { ConfigError } from './errors';
import type { TenantCredentials } from './types';

/** The companies of WFS_TENANTS_FILE: a non-empty JSON array of `{ tenantId, clientId, clientSecret, scope }`, each tenant once. A problem names the file and the entry, never a secret. */
export function readTenantsFile(path: string): TenantCredentials[] {
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
