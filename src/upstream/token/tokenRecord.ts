import { decodeJwt } from 'jose';
import { seal, sealingKey, unseal } from '../redis/seal';
import { checkApiBase } from '../transport/apiBase';
import { MAX_TOKEN_LIFETIME_SECONDS } from './tokenLifetime';
import type { TokenGrant } from './tokenEndpoint';

/*
 * A token as it is kept in the shared store: sealed (AES-256-GCM, ../redis/seal.ts, with
 * its own key derived from WFS_REDIS_KEY), so Redis (its backups, a MONITOR session, a
 * stolen dump) never holds a live bearer token in clear, and a record moved to another
 * tenant's key does not open (the key name is the additional authenticated data). What
 * opens is then checked as if it came from the token endpoint: the token's own claims
 * must bind it to the tenant and name the record's `api_base`, which must pass
 * `checkApiBase` with the allow-list.
 *
 * Why not jose's JWE (FlattenedEncrypt, `dir` + A256GCM, the key name as `aad`), which
 * would seal the same way: the stored format would change, so during a rolling deploy
 * old and new replicas would refuse each other's records (a token request per tenant
 * each time) unless a v2 reader shipped first; and it would replace about 25 lines of
 * node:crypto in seal.ts for a record 77 bytes longer (1,478 -> 1,555 bytes for a
 * 900-character token, compact serialisation, measured). Worth it with a `v2.` format.
 */

/** Clock difference between replicas we accept on `obtainedAt`, in ms. */
const MAX_FUTURE_SKEW_MS = 60_000;

/** Where a record's `api_base` may point: the rule `requestToken` applies to a fresh token. */
export interface ApiBasePolicy {
  readonly allowList: readonly string[];
  /** Whether a plain-http loopback shard is accepted without being on the allow-list. */
  readonly loopback: boolean;
}

/** The AES-256 key for the records, derived from WFS_REDIS_KEY (32+ characters). */
export function recordKey(secret: string): Buffer {
  if (secret.length < 32) throw new Error('the token store key must be at least 32 characters');
  return sealingKey(secret, 'wfs-subgraph token record v1');
}

export function sealRecord(key: Buffer, keyName: string, grant: TokenGrant): string {
  const record = {
    accessToken: grant.accessToken,
    tenantId: grant.tenantId,
    apiBase: grant.apiBase,
    scopes: [...grant.scopes],
    obtainedAt: grant.obtainedAt,
    expiresAt: grant.expiresAt,
  };
  return seal(key, keyName, JSON.stringify(record));
}

/** The record's JSON, or null when it is not ours (wrong key, another key name, tampered, garbage). */
export function openRecord(key: Buffer, keyName: string, value: string): unknown {
  const opened = unseal(key, keyName, value);
  if (!('text' in opened)) return null;
  try {
    return JSON.parse(opened.text) as unknown;
  } catch {
    return null;
  }
}

/**
 * A grant read back from the store, checked like a token response: the right shape,
 * bound to `tenantId` by its own `tenant_id` claim, an `api_base` claim that passes
 * `checkApiBase` under the same policy as a fresh token response (`loopback` false in
 * production, so a record naming a loopback shard is refused there too) and equals the
 * record's, and a sane lifetime. Null otherwise.
 */
export function verifyRecord(data: unknown, tenantId: string, policy: ApiBasePolicy, now: number): TokenGrant | null {
  if (typeof data !== 'object' || data === null) return null;
  const { accessToken, tenantId: boundTo, apiBase, scopes, obtainedAt, expiresAt } = data as Record<string, unknown>;
  if (typeof accessToken !== 'string' || accessToken.length === 0) return null;
  if (boundTo !== tenantId) return null;
  if (typeof apiBase !== 'string' || apiBase.length === 0) return null;
  if (!Array.isArray(scopes) || !scopes.every((scope): scope is string => typeof scope === 'string')) return null;
  if (typeof obtainedAt !== 'number' || !Number.isFinite(obtainedAt) || obtainedAt > now + MAX_FUTURE_SKEW_MS) return null;
  if (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt) || expiresAt <= obtainedAt) return null;
  if (expiresAt - obtainedAt > MAX_TOKEN_LIFETIME_SECONDS * 1000) return null;
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(accessToken);
  } catch {
    return null;
  }
  if (typeof claims.tenant_id !== 'string' || claims.tenant_id.toLowerCase() !== tenantId.toLowerCase()) return null;
  try {
    if (checkApiBase(claims.api_base, policy.allowList, policy.loopback) !== apiBase) return null;
  } catch {
    return null;
  }
  return { accessToken, tenantId, apiBase, scopes, obtainedAt, expiresAt };
}
