import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { SignJWT } from 'jose';
import { listen } from './fixtures';

/**
 * A small, independent fake of the upstream described in docs/upstream.md. It is NOT
 * the project's emulator: wherever the documentation is silent it makes other
 * choices (page numbers, keyset, absolute URLs with an explicit port, bare tokens
 * with `/+=:`, page-size policies, record shapes), so tests catch assumptions that
 * only hold against our own emulator.
 *
 * Three servers on 127.0.0.1:0: an identity provider under a path prefix, the shard
 * every tenant's `api_base` names, and an "evil" origin that must never be called.
 */

export const AUTH_PREFIX = '/realms/acme';
export const TOKEN_PATH = `${AUTH_PREFIX}/identity/o/api/token`;
export const LIST_PATHS = { locations: '/api/public/v1/locations/', shifts: '/api/public/v1/shifts/' } as const;
export type ListName = keyof typeof LIST_PATHS;

/** How `next` / `previous` look. */
export type RefFormat =
  /** `/api/public/v1/shifts/?page=2&page_size=25` */
  | 'page'
  /** `http://127.0.0.1:PORT/api/public/v1/shifts/?page=2&page_size=25` (explicit port) */
  | 'page-absolute'
  /** `/api/public/v1/shifts/?page=2`: a relative reference without page_size */
  | 'page-nosize'
  /** `?starting_after=shf_123` / `?ending_before=shf_100` */
  | 'keyset'
  /** `api/public/v1/shifts/?offset=50` (no leading slash, no page_size) */
  | 'offset-noslash'
  /** a bare opaque token with `/`, `+`, `=` and `:` in it: `c:50/25+Zm9v==` */
  | 'opaque'
  /** a bare opaque token of about 1 600 characters (accepted length is 2 048) */
  | 'opaque-long'
  /** a bare opaque token that starts with `/`, as 1 in 64 standard-base64 tokens do: `/c:50/25+Zm9v==` */
  | 'opaque-slash';

/** What the shard does with `page_size`. */
export type SizePolicy = { kind: 'honour'; default: number } | { kind: 'fixed'; size: number } | { kind: 'cap'; size: number };

export interface ShardCall {
  readonly list: ListName | null;
  readonly method: string;
  readonly url: string;
  readonly authorization: string | undefined;
  /** When it arrived, in ms since the epoch (tests whose subject is a wait compare these). */
  readonly receivedAt: number;
}

export interface FaultContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly list: ListName;
  readonly url: URL;
  /** 1 for the first call of this tenant to this list, 2 for the second, ... */
  readonly attempt: number;
  readonly tenant: ForeignTenant;
  /** The page the shard would serve, as an envelope (tests may alter it). */
  readonly envelope: () => ListEnvelope;
}

export interface ListEnvelope {
  object: 'list';
  data: unknown[];
  has_more: boolean;
  next: string | null;
  previous: string | null;
}

export interface ForeignTenantSpec {
  readonly name: string;
  readonly format?: RefFormat;
  readonly size?: SizePolicy;
  readonly locations?: unknown[];
  readonly shifts?: unknown[];
  /** Scopes listed in WFS_TENANTS_FILE (requested). Default `shifts.read`. */
  readonly scope?: string;
  /** Scopes the token endpoint grants. Default: what was requested. */
  readonly granted?: string;
  /** Leave `scope` out of the token response (RFC 6749 allows it). */
  readonly omitScope?: boolean;
  /** Claim overrides; the function gets the shard origin. */
  readonly claims?: (shardOrigin: string, evilOrigin: string) => Record<string, unknown>;
  /** Takes over a list response when it returns true. */
  readonly fault?: (ctx: FaultContext) => boolean;
  /** Takes over a token response when it returns (or resolves to) true; resolving false later lets the request be answered normally. */
  readonly tokenFault?: (req: IncomingMessage, res: ServerResponse, attempt: number) => boolean | Promise<boolean>;
  /** Rewrites the token response body (odd `expires_in` and the like); the token itself is issued as usual. */
  readonly tokenResponse?: (body: Record<string, unknown>) => Record<string, unknown>;
  /** The shard answers 401 to every data call. */
  readonly alwaysUnauthorized?: boolean;
}

export interface ForeignTenant extends ForeignTenantSpec {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly format: RefFormat;
  readonly size: SizePolicy;
  readonly locations: unknown[];
  readonly shifts: unknown[];
  readonly scope: string;
  tokenRequests: number;
  /** Every token request body (form fields) and headers. */
  tokenRequestLog: Array<{ form: URLSearchParams; authorization: string | undefined; contentType: string | undefined }>;
  calls: ShardCall[];
}

export interface ForeignUpstream {
  readonly authUrl: string;
  readonly shardOrigin: string;
  readonly evilOrigin: string;
  readonly idpOrigin: string;
  readonly tenants: Map<string, ForeignTenant>;
  /** Requests that reached the evil origin (must stay empty). */
  readonly evilHits: ShardCall[];
  /** Shard requests with a path that is not a list path. */
  readonly strayShardHits: ShardCall[];
  /** Every access token the identity provider issued. */
  readonly issuedTokens: string[];
  add(spec: ForeignTenantSpec): ForeignTenant;
  tenant(name: string): ForeignTenant;
  close(): Promise<void>;
}

function uuidFor(index: number): string {
  const hex = index.toString(16).padStart(12, '0');
  return `f0e1d2c3-0000-4000-8000-${hex}`;
}

/** The id a record is known by (for keyset references), or a placeholder for a broken one. */
function keyOf(record: unknown, index: number): string {
  if (typeof record === 'object' && record !== null && 'id' in record) {
    const id = (record as { id: unknown }).id;
    if (typeof id === 'string' || typeof id === 'number') return String(id);
  }
  return `__broken_${index}`;
}

const LONG_PAD = 'Zm9v/YmFy+YmF6='.repeat(105); // 1 575 characters, `/`, `+`, `=` inside

function effectiveSize(policy: SizePolicy, requested: number | undefined): number {
  switch (policy.kind) {
    case 'honour':
      return requested ?? policy.default;
    case 'fixed':
      return policy.size;
    case 'cap':
      return Math.min(requested ?? policy.size, policy.size);
  }
}

function tracked(server: Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return sockets;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startForeignUpstream(): Promise<ForeignUpstream> {
  const signingKey = randomBytes(32);
  const tenantsByName = new Map<string, ForeignTenant>();
  const tokens = new Map<string, ForeignTenant>();
  const evilHits: ShardCall[] = [];
  const strayShardHits: ShardCall[] = [];
  const issuedTokens: string[] = [];
  let counter = 0;
  let shardOrigin = '';
  let evilOrigin = '';

  const idp = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const url = new URL(req.url ?? '/', 'http://idp.invalid');
      if (req.method !== 'POST' || url.pathname !== TOKEN_PATH) return sendJson(res, 404, { error: 'not_found' });
      const form = new URLSearchParams(body);
      const tenant = [...tenantsByName.values()].find((t) => t.clientId === form.get('client_id'));
      if (!tenant) return sendJson(res, 401, { error: 'invalid_client' });
      tenant.tokenRequests += 1;
      tenant.tokenRequestLog.push({ form, authorization: req.headers.authorization, contentType: req.headers['content-type'] });
      if (await tenant.tokenFault?.(req, res, tenant.tokenRequests)) return;
      if (form.get('grant_type') !== 'client_credentials' || form.get('client_secret') !== tenant.clientSecret) {
        return sendJson(res, 401, { error: 'invalid_client' });
      }
      const granted = tenant.granted ?? form.get('scope') ?? tenant.scope;
      const claims = {
        api_base: shardOrigin,
        tenant_id: tenant.tenantId,
        // Other claims exist in the payload (docs/upstream.md, "Token endpoint").
        azp: tenant.clientId,
        scp: granted.split(' ').filter(Boolean),
        realm: 'acme',
        'https://acme.example/shard': 'eu-3',
        ...(tenant.claims?.(shardOrigin, evilOrigin) ?? {}),
      };
      const accessToken = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', kid: 'acme-2026' })
        .setIssuer(`http://idp.invalid${AUTH_PREFIX}`)
        .setSubject(tenant.clientId)
        .setAudience('wfs-public-api')
        .setJti(randomBytes(8).toString('hex'))
        .setIssuedAt()
        .setExpirationTime('15m')
        .sign(signingKey);
      tokens.set(accessToken, tenant);
      issuedTokens.push(accessToken);
      const answer = {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: 900,
        ...(tenant.omitScope ? {} : { scope: granted }),
      };
      sendJson(res, 200, tenant.tokenResponse ? tenant.tokenResponse(answer) : answer);
    })().catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error' });
    });
  });

  const shard = createServer((req, res) => {
    const url = new URL(req.url ?? '/', shardOrigin);
    const list = (Object.keys(LIST_PATHS) as ListName[]).find((name) => LIST_PATHS[name] === url.pathname) ?? null;
    const call: ShardCall = { list, method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, receivedAt: Date.now() };
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const tenant = bearer ? tokens.get(bearer) : undefined;
    if (!list) {
      strayShardHits.push(call);
      return sendJson(res, 404, { error: 'not_found' });
    }
    if (!tenant) return sendJson(res, 401, { error: 'invalid_token' });
    tenant.calls.push(call);
    if (tenant.alwaysUnauthorized) return sendJson(res, 401, { error: 'invalid_token' });
    const attempt = tenant.calls.filter((c) => c.list === list).length;
    const envelope = () => serve(tenant, list, url);
    if (tenant.fault?.({ req, res, list, url, attempt, tenant, envelope })) return;
    if (list === 'shifts' && !(tenant.granted ?? tenant.scope).split(' ').includes('shifts.read')) {
      return sendJson(res, 403, { error: 'insufficient_scope' });
    }
    const page = envelope();
    sendJson(res, 200, page);
  });

  const evil = createServer((req, res) => {
    evilHits.push({ list: null, method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, receivedAt: Date.now() });
    sendJson(res, 200, { object: 'list', data: [], has_more: false, next: null, previous: null });
  });

  const sockets = [tracked(idp), tracked(shard), tracked(evil)];
  const idpOrigin = `http://127.0.0.1:${await listen(idp)}`;
  shardOrigin = `http://127.0.0.1:${await listen(shard)}`;
  evilOrigin = `http://127.0.0.1:${await listen(evil)}`;

  /** The page the shard serves for this tenant, list and query. */
  function serve(tenant: ForeignTenant, list: ListName, url: URL): ListEnvelope {
    const records = tenant[list];
    const rawSize = url.searchParams.get('page_size');
    const requested = rawSize !== null && /^\d+$/.test(rawSize) ? Number(rawSize) : undefined;
    const size = effectiveSize(tenant.size, requested);
    const path = LIST_PATHS[list];
    const q = url.searchParams;
    let start = 0;
    let limit = Number.POSITIVE_INFINITY;
    switch (tenant.format) {
      case 'page':
      case 'page-absolute':
      case 'page-nosize':
        start = (Number(q.get('page') ?? '1') - 1) * size;
        break;
      case 'offset-noslash':
        start = Number(q.get('offset') ?? '0');
        break;
      case 'keyset': {
        const after = q.get('starting_after');
        const before = q.get('ending_before');
        if (after !== null) start = records.findIndex((r, i) => keyOf(r, i) === after) + 1;
        else if (before !== null) {
          limit = records.findIndex((r, i) => keyOf(r, i) === before);
          start = Math.max(0, limit - size);
        }
        break;
      }
      case 'opaque':
      case 'opaque-long':
      case 'opaque-slash': {
        const token = q.get('cursor');
        if (token !== null) {
          const match = /^\/?c:(\d+)\/(\d+)\+/.exec(token);
          if (!match) throw new Error(`the fake shard got a cursor it did not issue: ${token.slice(0, 40)}`);
          start = Number(match[1]);
        }
        break;
      }
    }
    start = Math.max(0, start);
    const data = records.slice(start, Math.min(start + size, limit));
    const end = start + data.length;
    const hasMore = end < records.length;
    const ref = (offset: number, direction: 'next' | 'previous'): string => {
      const page = Math.floor(offset / size) + 1;
      switch (tenant.format) {
        case 'page':
          return `${path}?page=${page}&page_size=${size}`;
        case 'page-absolute':
          return `${shardOrigin}${path}?page=${page}&page_size=${size}`;
        case 'page-nosize':
          return `${path}?page=${page}`;
        case 'offset-noslash':
          return `${path.slice(1)}?offset=${offset}`;
        case 'keyset':
          return direction === 'next'
            ? `?starting_after=${encodeURIComponent(keyOf(records[offset - 1], offset - 1))}`
            : `?ending_before=${encodeURIComponent(keyOf(records[start], start))}`;
        case 'opaque':
          return `c:${offset}/${size}+Zm9v==`;
        case 'opaque-long':
          return `c:${offset}/${size}+${LONG_PAD}`;
        case 'opaque-slash':
          return `/c:${offset}/${size}+Zm9v==`;
      }
    };
    return {
      object: 'list',
      data,
      has_more: hasMore,
      next: hasMore ? ref(end, 'next') : null,
      previous: start > 0 ? ref(Math.max(0, start - size), 'previous') : null,
    };
  }

  return {
    authUrl: `${idpOrigin}${AUTH_PREFIX}`,
    get shardOrigin() {
      return shardOrigin;
    },
    get evilOrigin() {
      return evilOrigin;
    },
    idpOrigin,
    tenants: tenantsByName,
    evilHits,
    strayShardHits,
    issuedTokens,
    add(spec) {
      counter += 1;
      const tenant: ForeignTenant = {
        ...spec,
        tenantId: uuidFor(counter),
        clientId: `acme-${spec.name}`,
        clientSecret: `s3cr3t-${spec.name}-${randomBytes(6).toString('hex')}`,
        format: spec.format ?? 'page',
        size: spec.size ?? { kind: 'honour', default: 20 },
        locations: spec.locations ?? [],
        shifts: spec.shifts ?? [],
        scope: spec.scope ?? 'shifts.read',
        tokenRequests: 0,
        tokenRequestLog: [],
        calls: [],
      };
      tenantsByName.set(spec.name, tenant);
      return tenant;
    },
    tenant(name) {
      const tenant = tenantsByName.get(name);
      if (!tenant) throw new Error(`no tenant ${name}`);
      return tenant;
    },
    async close() {
      for (const server of [idp, shard, evil]) server.closeAllConnections();
      for (const set of sockets) for (const socket of set) socket.destroy();
      await Promise.all([idp, shard, evil].map((server) => new Promise((resolve) => server.close(resolve))));
    },
  };
}

/** Location records with extra fields and mixed id types. */
export function makeLocations(count: number): unknown[] {
  return Array.from({ length: count }, (_, i) =>
    i % 4 === 3
      ? { object: 'location', id: 7000 + i, name: `Depot ${i}`, timezone: 'Europe/Berlin', address: { city: 'Köln' }, archived: false }
      : { object: 'location', id: `loc_${String(i).padStart(3, '0')}`, name: `Site ${i}`, lat: 50.9, lng: 6.9, tags: ['a'] },
  );
}

/** The id a location record is known by on our side. */
export function locationId(record: unknown): string {
  return String((record as { id: string | number }).id);
}

const STARTS = ['2026-11-23T09:00:00Z', '2026-11-23T09:00:00+01:00', '2026-11-23T09:00:00.123-05:30', '2026-11-23T09:00:00.123456Z', '2026-11-23T23:30:00.5+05:45'];

/**
 * Shift records in the shapes docs/upstream.md, "Record shapes" allows: `location` as an id, a
 * number or an object with `id` and `name`; `user` null, an id or an object; times
 * with `Z`, offsets and fractional seconds; numeric ids; extra fields.
 */
export function makeShifts(count: number, locations: readonly unknown[]): unknown[] {
  return Array.from({ length: count }, (_, i) => {
    const location = locations.length > 0 ? locations[i % locations.length] : undefined;
    const lid = location === undefined ? null : (location as { id: string | number }).id;
    const locationField =
      lid === null ? null : i % 3 === 0 ? { id: lid, name: (location as { name: string }).name, object: 'location' } : i % 3 === 1 ? lid : String(lid);
    const user = i % 4 === 0 ? null : i % 4 === 1 ? `usr_${i}` : i % 4 === 2 ? { id: `usr_${i}`, name: `Person ${i}` } : 4200 + i;
    return {
      object: 'shift',
      id: i % 10 === 9 ? 90_000 + i : `shf_${String(i).padStart(4, '0')}`,
      location: locationField,
      start: STARTS[i % STARTS.length],
      end: STARTS[(i + 1) % STARTS.length],
      user,
      status: 'published',
      breaks: [{ minutes: 30 }],
      created_at: '2026-01-01T00:00:00Z',
    };
  });
}

export function shiftId(record: unknown): string {
  return String((record as { id: string | number }).id);
}
