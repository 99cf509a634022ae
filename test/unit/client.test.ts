import { MockAgent } from 'undici';
import { WfsClient } from '../../src/upstream/client';
import { normalizeDateTime } from '../../src/upstream/records';
import { locations, shifts } from '../../src/upstream/resources';
import { TokenCache } from '../../src/upstream/token/tokenCache';
import type { TokenGrant } from '../../src/upstream/token/tokenEndpoint';
import { TENANT, TENANT_ID, tokenGrant } from '../helpers/fixtures';

const origin = 'https://shard-1.example.com';
const path = '/api/public/v1/locations/';

function setup(scopes: string[] = ['shifts.read']) {
  const agent = new MockAgent({ connections: 1 });
  agent.disableNetConnect();
  let issued = 0;
  const fetchToken = jest.fn(async (): Promise<TokenGrant> => {
    issued += 1;
    return tokenGrant({ accessToken: `tok-${issued}`, apiBase: origin, scopes, lifeMs: 900_000 });
  });
  const tokens = new TokenCache({ tenants: [{ ...TENANT, scope: '' }], fetchToken });
  const client = new WfsClient({ tokens, dispatcher: agent, maxRetryAfterSeconds: 1 });
  return { agent, pool: agent.get(origin), client, fetchToken };
}

const envelope = (data: unknown[], extra: Record<string, unknown> = {}) => ({ object: 'list', data, has_more: false, next: null, previous: null, ...extra });

describe('normalizeDateTime', () => {
  it.each([
    ['2026-11-23T09:00:00+01:00', '2026-11-23T09:00:00+01:00'],
    ['2026-11-23T09:00:00.123Z', '2026-11-23T09:00:00.123Z'],
    ['2026-11-23 09:00+0100', '2026-11-23T09:00:00+01:00'],
    ['2026-11-23T09:00:00-05', '2026-11-23T09:00:00-05:00'],
    ['2026-11-23t09:00:00z', '2026-11-23T09:00:00Z'],
  ])('serves %s as %s', (raw, expected) => {
    expect(normalizeDateTime(raw)).toBe(expected);
  });

  it.each(['2026-11-23T09:00:00', 'tomorrow', '2026-13-45T99:00:00Z', ''])('refuses %p', (raw) => {
    expect(normalizeDateTime(raw)).toBeNull();
  });
});

describe('WfsClient', () => {
  it('sends the bearer token and page_size to the tenant shard and maps records', async () => {
    const { agent, pool, client } = setup();
    pool
      .intercept({ path: `${path}?page_size=100`, method: 'GET', headers: { authorization: 'Bearer tok-1' } })
      .reply(200, envelope([{ object: 'location', id: 'l1', name: 'Quay', timezone: 'Europe/London' }, { object: 'location', id: 'l2' }]));
    const page = await client.listPage(TENANT_ID, locations);
    expect(page.items[0]).toEqual({ id: 'l1', name: 'Quay' });
    expect(page.items[1]).toMatchObject({ malformed: true });
    agent.assertNoPendingInterceptors();
  });

  it('renews the token once on 401 and retries', async () => {
    const { agent, pool, client, fetchToken } = setup();
    pool.intercept({ path: `${path}?page_size=100`, headers: { authorization: 'Bearer tok-1' } }).reply(401, {});
    pool.intercept({ path: `${path}?page_size=100`, headers: { authorization: 'Bearer tok-2' } }).reply(200, envelope([]));
    await expect(client.listPage(TENANT_ID, locations)).resolves.toMatchObject({ items: [] });
    expect(fetchToken).toHaveBeenCalledTimes(2);
    agent.assertNoPendingInterceptors();
  });

  it('fails with UPSTREAM_UNAUTHORIZED on a second 401, without a loop', async () => {
    const { pool, client, fetchToken } = setup();
    pool.intercept({ path: `${path}?page_size=100` }).reply(401, {}).times(2);
    await expect(client.listPage(TENANT_ID, locations)).rejects.toMatchObject({ code: 'UPSTREAM_UNAUTHORIZED' });
    expect(fetchToken).toHaveBeenCalledTimes(2);
  });

  it('drops a token refused twice: the next request asks for a new one instead of spending another 401 on it', async () => {
    const { agent, pool, client, fetchToken } = setup();
    const withToken = (token: string) => ({ path: `${path}?page_size=100`, headers: { authorization: `Bearer ${token}` } });
    pool.intercept(withToken('tok-1')).reply(200, envelope([]));
    await client.listPage(TENANT_ID, locations);
    pool.intercept(withToken('tok-1')).reply(401, {});
    pool.intercept(withToken('tok-2')).reply(401, {});
    await expect(client.listPage(TENANT_ID, locations)).rejects.toMatchObject({ code: 'UPSTREAM_UNAUTHORIZED' });
    pool.intercept(withToken('tok-3')).reply(200, envelope([]));
    await expect(client.listPage(TENANT_ID, locations)).resolves.toMatchObject({ items: [] });
    expect(fetchToken).toHaveBeenCalledTimes(3);
    agent.assertNoPendingInterceptors();
  });

  it('honours Retry-After on 429, then gives up with UPSTREAM_RATE_LIMITED', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: `${path}?page_size=100` }).reply(429, '', { headers: { 'retry-after': '0' } });
    pool.intercept({ path: `${path}?page_size=100` }).reply(200, envelope([]));
    await expect(client.listPage(TENANT_ID, locations)).resolves.toMatchObject({ items: [] });
    pool.intercept({ path: `${path}?page_size=100` }).reply(429, '', { headers: { 'retry-after': '120' } });
    await expect(client.listPage(TENANT_ID, locations)).rejects.toMatchObject({ code: 'UPSTREAM_RATE_LIMITED', details: { retryAfterSeconds: 120 } });
  });

  it('retries one transient 503, then reports UPSTREAM_UNAVAILABLE', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: `${path}?page_size=100` }).reply(503, 'busy').times(2);
    await expect(client.listPage(TENANT_ID, locations)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
  });

  it.each([
    ['not JSON', '<html>'],
    ['not an envelope', JSON.stringify({ results: [] })],
    ['has_more without next', JSON.stringify(envelope([], { has_more: true }))],
    ['next on another origin', JSON.stringify(envelope([], { has_more: true, next: 'https://evil.example.net/api/public/v1/locations/?cursor=x' }))],
  ])('reports %s as UPSTREAM_BAD_RESPONSE', async (_name, body) => {
    const { pool, client } = setup();
    pool.intercept({ path: `${path}?page_size=100` }).reply(200, body);
    await expect(client.listPage(TENANT_ID, locations)).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
  });

  it('maps 403 to FORBIDDEN, and makes no call when the token lacks shifts.read', async () => {
    const { agent, pool, client } = setup([]);
    await expect(client.listPage(TENANT_ID, shifts)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    pool.intercept({ path: `${path}?page_size=100` }).reply(403, {});
    await expect(client.listPage(TENANT_ID, locations)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    agent.assertNoPendingInterceptors();
  });

  it('maps shift records tolerantly: location as id or object, missing optional fields as null', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: `/api/public/v1/shifts/?page_size=100` }).reply(200, envelope([
      { object: 'shift', id: 's1', location: 'l1', start: '2026-11-23T09:00:00+01:00', end: '2026-11-23T17:00:00+01:00', user: 'u1', role: 'barista' },
      { object: 'shift', id: 's2', location: { id: 'l2', name: 'x' }, user: null },
      { object: 'timesheet', id: 's3' },
    ]));
    const page = await client.listPage(TENANT_ID, shifts);
    expect(page.items).toEqual([
      { id: 's1', locationId: 'l1', start: '2026-11-23T09:00:00+01:00', end: '2026-11-23T17:00:00+01:00', userId: 'u1' },
      { id: 's2', locationId: 'l2', start: null, end: null, userId: null },
      expect.objectContaining({ malformed: true }),
    ]);
  });

  it('sends the page size, reference and a resource\'s upstream query from one options object', async () => {
    const { agent, pool, client } = setup();
    pool.intercept({ path: `${path}?page_size=30&site=north` }).reply(200, envelope([], { has_more: true, next: '?page=2&page_size=30' }));
    pool.intercept({ path: `${path}?page=2&page_size=30` }).reply(200, envelope([]));
    const first = await client.listPage(TENANT_ID, locations, { pageSize: 30, query: { site: 'north' } });
    expect(first).toMatchObject({ ref: null, pageSize: 30, next: 'page=2&page_size=30' });
    // A reference carries its own query: the resource's is not added again.
    await client.listPage(TENANT_ID, locations, { ref: first.next, pageSize: 30, query: { site: 'north' } });
    agent.assertNoPendingInterceptors();
  });
});
