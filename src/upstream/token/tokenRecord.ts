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

/**
 * The longest value a replica reads back as a token record, in bytes: 256 KiB, the bound
 * of a live message (live/redisMessages.ts). A record holds at most the longest token and
 * scope `requestToken` keeps (16 Ki and 4 Ki characters, 6 bytes of JSON each at the very
 * worst, for escaped control characters) and a few short fields, sealed: under 170 KiB,
 * and about 2 KiB for a usual JWT. A longer value is no replica's and is refused by its
 * length before a byte of it is read (a 500 MB one once took the read 3.3 s and the
 * replica's RSS to 1.6 GB); a record of ours that would not fit is not written.
 */
export const MAX_RECORD_BYTES = 256 * 1024;

/**
 * Why a value read back from the shared store is no token (the `reason` label of
 * wfs_shared_token_store_rejected_records_total):
 *
 *   seal   it does not open with our key: written by a deployment with another
 *          WFS_REDIS_KEY (sharing the key prefix), moved from another key, or forged
 *   shape  it opens but is not a token record this replica accepts (fields, tenant
 *          binding, api_base, lifetime), or the key is not a string at all
 *   size   longer than MAX_RECORD_BYTES: refused unread
 */
export type RejectedRecordReason = 'seal' | 'shape' | 'size';

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

/** The grant in `value`, read from the key `keyName`, checked as `verifyRecord` does; or why it is refused. */
export function readRecord(key: Buffer, keyName: string, value: string, tenantId: string, policy: ApiBasePolicy, now: number): TokenGrant | RejectedRecordReason {
  if (value.length > MAX_RECORD_BYTES) return 'size';
  const opened = unseal(key, keyName, value);
  if (!('text' in opened)) return 'seal';
  let data: unknown;
  try {
    data = JSON.parse(opened.text);
  } catch {
    return 'shape';
  }
  return verifyRecord(data, tenantId, policy, now) ?? 'shape';
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
