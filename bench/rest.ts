import { request, type Dispatcher } from 'undici';

/** What a tenant needs to talk to the upstream itself. */
export interface RestCredentials {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scope: string;
}

export interface UpstreamLocation {
  readonly id: string;
  readonly name: string;
}

export interface UpstreamShift {
  readonly id: string;
  readonly start?: string | null;
  readonly end?: string | null;
  readonly location?: string | { id: string } | null;
}

interface Envelope<T> {
  readonly data: T[];
  readonly has_more: boolean;
  readonly next: string | null;
}

interface Session {
  readonly accessToken: string;
  readonly apiBase: string;
}

export const LOCATIONS_PATH = '/api/public/v1/locations/';
export const SHIFTS_PATH = '/api/public/v1/shifts/';

/**
 * The "direct" baseline: a client that calls the upstream itself, the sensible way.
 * One token per tenant, fetched once and kept for the whole run, then only list
 * calls, each asking for exactly the page size it needs. It does no validation
 * beyond what it needs to work, so it is the floor the GraphQL servers are
 * measured against.
 */
export class DirectClient {
  private readonly sessions = new Map<string, Promise<Session>>();

  constructor(
    private readonly authUrl: string,
    private readonly dispatcher: Dispatcher,
  ) {}

  /** Token for the tenant: requested on first use, then reused. */
  session(tenant: RestCredentials): Promise<Session> {
    let session = this.sessions.get(tenant.tenantId);
    if (!session) {
      session = this.requestToken(tenant);
      this.sessions.set(tenant.tenantId, session);
      session.catch(() => this.sessions.delete(tenant.tenantId));
    }
    return session;
  }

  /** One page: the first when `ref` is null, else the page an envelope's `next` names. */
  async page<T>(tenant: RestCredentials, path: string, pageSize: number, ref: string | null): Promise<Envelope<T>> {
    const session = await this.session(tenant);
    const url = pageUrl(session.apiBase, path, pageSize, ref);
    const response = await request(url, {
      method: 'GET',
      dispatcher: this.dispatcher,
      headers: { authorization: `Bearer ${session.accessToken}`, accept: 'application/json' },
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`GET ${path} answered ${response.statusCode}`);
    }
    return (await response.body.json()) as Envelope<T>;
  }

  /** Pages of a list from the start until `wanted` says it has seen enough (or the list ends). */
  async scan<T extends { id: string }>(tenant: RestCredentials, path: string, done: (seen: ReadonlyMap<string, T>) => boolean): Promise<Map<string, T>> {
    const seen = new Map<string, T>();
    let ref: string | null = null;
    for (;;) {
      const envelope: Envelope<T> = await this.page<T>(tenant, path, 100, ref);
      for (const item of envelope.data) seen.set(item.id, item);
      if (done(seen) || !envelope.has_more || !envelope.next) return seen;
      ref = envelope.next;
    }
  }

  private async requestToken(tenant: RestCredentials): Promise<Session> {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: tenant.clientId, client_secret: tenant.clientSecret });
    if (tenant.scope) form.set('scope', tenant.scope);
    const response = await request(`${this.authUrl.replace(/\/+$/, '')}/identity/o/api/token`, {
      method: 'POST',
      dispatcher: this.dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`token endpoint answered ${response.statusCode} for ${tenant.tenantId}`);
    }
    const body = (await response.body.json()) as { access_token: string };
    return { accessToken: body.access_token, apiBase: apiBaseOf(body.access_token) };
  }
}

/** The `api_base` claim, read from the JWT payload as a routing hint (docs/upstream.md, "Token endpoint"). */
export function apiBaseOf(accessToken: string): string {
  const payload = JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as { api_base?: unknown };
  if (typeof payload.api_base !== 'string') throw new Error('the token has no api_base claim');
  return payload.api_base.replace(/\/+$/, '');
}

/**
 * A page URL: the list path on the shard, or the page an envelope's `next` names.
 * `next` may be an absolute URL, a path-relative URL or a bare token (docs/upstream.md,
 * "Page references"); `page_size` is always sent.
 */
export function pageUrl(apiBase: string, path: string, pageSize: number, ref: string | null): URL {
  const base = new URL(path, apiBase);
  let url: URL;
  if (ref === null) url = base;
  else if (/^[a-z][a-z0-9+.-]*:|^[/?.]/i.test(ref) || ref.includes('/')) url = new URL(ref, base);
  else {
    url = base;
    url.searchParams.set('cursor', ref);
  }
  if (!url.searchParams.has('page_size')) url.searchParams.set('page_size', String(pageSize));
  return url;
}

export function locationIdOf(shift: UpstreamShift): string | null {
  const location = shift.location;
  if (typeof location === 'string') return location;
  return location && typeof location === 'object' ? location.id : null;
}
