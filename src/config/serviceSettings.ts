import * as read from './readers';
import { setting } from './spec';

/**
 * The settings of who may ask and where answers come from: the process (port, host,
 * mode, logs), the upstream and its tenants, the caller's identity, Redis and the
 * secrets. One entry each: its reader, its value when unset, whether only a real
 * upstream takes it, and its line in docs/configuration.md. How they combine (demo mode,
 * what production requires, which needs which) is loadConfig's (load.ts).
 */
export const SERVICE_SETTINGS = {
  PORT: setting(read.port, 4001, {
    meaning: 'HTTP port',
    whenUnset: '`4001`',
  }),
  HOST: setting(read.text, '127.0.0.1', {
    meaning: 'interface to bind',
    whenUnset: '`127.0.0.1` (`0.0.0.0` in the Docker image)',
  }),
  NODE_ENV: setting(read.text, undefined, {
    meaning: '`production`: the explorer and introspection default to off, `WFS_AUTH_URL` is required (unless `WFS_DEMO=true`), `WFS_CURSOR_SECRET` is required, trusted-header mode needs `WFS_ROUTER_SECRET` (or `WFS_TRUSTED_NETWORK=true`), and a loopback `api_base` must be allowed by `WFS_API_BASE_ALLOW`',
    whenUnset: 'unset',
  }),
  LOG_LEVEL: setting(read.oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info', {
    meaning: '`fatal` … `trace`, `silent`',
    whenUnset: '`info`',
  }),
  WFS_AUTH_URL: setting(read.secureUrl, null, {
    meaning: 'identity provider base; the token endpoint is `{WFS_AUTH_URL}/identity/o/api/token` (a path prefix is kept). `https:`, or `http:` on a loopback host only (client secrets cross this connection)',
    whenUnset: 'unset: demo mode on the embedded emulator (see above)',
  }),
  WFS_DEMO: setting(read.flag, false, {
    meaning: '`true`: run demo mode even with `NODE_ENV=production`',
    whenUnset: '`false`',
  }),
  WFS_TENANTS_FILE: setting(read.text, undefined, {
    meaning: 'JSON array of `{ "tenantId", "clientId", "clientSecret", "scope" }`, one per company',
    whenUnset: 'required with `WFS_AUTH_URL`', upstream: true,
  }),
  WFS_TENANT_HEADER: setting(read.headerName, 'x-tenant-id', {
    meaning: 'request header naming the tenant (trusted-header mode)',
    whenUnset: '`x-tenant-id`',
  }),
  WFS_JWKS_URL: setting(read.secureUrl, null, {
    meaning: "verified-identity mode: the caller's `Authorization: Bearer` JWT is verified against the JWKS (`https:`, or `http:` on loopback), its issuer and audience (`WFS_JWT_ISSUER` and `WFS_JWT_AUDIENCE`, both required), an `exp` it must carry and any `nbf`, with 30 s clock tolerance and asymmetric algorithms only (RS\\*, PS\\*, ES\\*, EdDSA; never `none` or HS\\*), and a `typ` header, when present, of `JWT` or `at+jwt`; the tenant is read from the claim `WFS_TENANT_CLAIM` names and the header is then ignored. The key set is cached 10 min; while the JWKS endpoint fails, the last key set fetched stands in for up to 1 h after that fetch (warned), so an identity-provider outage does not make every request wait and fail",
    whenUnset: 'unset: trusted-header mode', upstream: true,
  }),
  WFS_JWT_ISSUER: setting(read.text, undefined, {
    meaning: "the issuer (`iss`) a caller's JWT must name; required with `WFS_JWKS_URL`",
    whenUnset: 'none', upstream: true,
  }),
  WFS_JWT_AUDIENCE: setting(read.text, undefined, {
    meaning: "the audience (`aud`) a caller's JWT must name; required with `WFS_JWKS_URL`, unless `WFS_JWT_NO_AUDIENCE=true`",
    whenUnset: 'none', upstream: true,
  }),
  WFS_JWT_NO_AUDIENCE: setting(read.flag, false, {
    meaning: '`true`: accept tokens without an audience check, for a provider that issues none (warned at start; then a token issued for another application of the same provider is accepted too)',
    whenUnset: '`false`', upstream: true,
  }),
  WFS_TENANT_CLAIM: setting(read.text, 'tenant_id', {
    meaning: "the claim of a caller's JWT that names the tenant (verified-identity mode)",
    whenUnset: '`tenant_id`', upstream: true,
  }),
  WFS_ROUTER_SECRET: setting(read.secret(16), null, {
    meaning: 'every GraphQL request and WebSocket upgrade must carry `router-authorization: <secret>` (health, ready and metrics are exempt); one without it is answered `401` `UNAUTHENTICATED`, an upgrade before its handshake. With `NODE_ENV=production` in trusted-header mode (no `WFS_JWKS_URL`, not demo) it is required, unless `WFS_TRUSTED_NETWORK=true`',
    whenUnset: 'unset',
  }),
  WFS_TRUSTED_NETWORK: setting(read.flag, false, {
    meaning: '`true`: with `NODE_ENV=production`, run trusted-header mode without `WFS_ROUTER_SECRET` because only the router can reach the port (warned at start: whoever reaches it reads any tenant)',
    whenUnset: '`false`',
  }),
  WFS_REDIS_URL: setting(read.redisUrl, null, {
    meaning: '`redis://` or `rediss://`: shared token cache and refresh lock for several replicas',
    whenUnset: 'unset: in-process cache', upstream: true,
  }),
  WFS_REDIS_KEY: setting(read.secret(32), null, {
    meaning: 'key (32+ characters) that encrypts each token record in Redis (AES-256-GCM), and from which the key sealing live-update messages and poll leases is derived; required with `WFS_REDIS_URL`, shared by the replicas. A record that does not decrypt, or whose token is not bound to the tenant and an allowed `api_base`, is ignored and the token fetched again; a live message or lease that does not open is dropped and counted ([Live updates](live.md#several-replicas-redis))',
    whenUnset: 'none', upstream: true,
  }),
  WFS_REDIS_KEY_PREFIX: setting(read.keyPrefix, 'wfs:', {
    meaning: 'begins every Redis key and channel the subgraph uses: token records (`<prefix>token:<tenant>`), refresh locks (`<prefix>lock:<tenant>`), live-update poll leases and channels (`<prefix>live:…`). 1 to 64 letters, digits or `_.:-`. Give each deployment sharing one Redis its own (say `wfs-blue:`, `wfs-green:`), and scope each one\'s ACL user to it (`~wfs-blue:*`, `&wfs-blue:*`): with one prefix, two deployments overwrite each other\'s token records, and each then refuses the other\'s (`wfs_shared_token_store_rejected_records_total{reason="seal"}`, [runbook](runbook.md#runbook-redis-records)). The replicas of one deployment share it. Only with `WFS_REDIS_URL`',
    whenUnset: '`wfs:`', upstream: true,
  }),
  WFS_CURSOR_SECRET: setting(read.secret(32), undefined, {
    meaning: 'key (32+ characters) from which the key sealing connection cursors (AES-256-GCM) is derived; replicas must share it',
    whenUnset: 'required with `NODE_ENV=production` (outside demo mode) or `WFS_REDIS_URL`; otherwise random per process (warned outside demo mode)',
  }),
  WFS_API_BASE_ALLOW: setting(read.hostList, [], {
    meaning: 'comma-separated hosts (`api.example.com`, `*.example.com`, `host:port`) or address ranges (`10.20.0.0/16`, `fd12::/16`) an `api_base` claim may name; the only way to reach a shard on a private network, and, with `NODE_ENV=production` (outside demo mode), on loopback (`localhost`, `127.0.0.1`). Cloud metadata and link-local addresses are refused even when listed',
    whenUnset: 'unset: any https host on a public address (and loopback outside production)', upstream: true,
  }),
  WFS_EXPLORER: setting(read.flag, undefined, {
    meaning: 'serve the explorer at `/` (a browser opening `/graphql` is sent there too)',
    whenUnset: 'on, except with `NODE_ENV=production`',
  }),
  WFS_INTROSPECTION: setting(read.flag, undefined, {
    meaning: "answer introspection queries (`__schema`, `__type`); the router's `_service` SDL is always served. An explorer without introspection shows no docs and no completion (a start-up warning says so)",
    whenUnset: 'on, except with `NODE_ENV=production`',
  }),
};
