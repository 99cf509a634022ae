import { TokenCache, usableUntil, refreshFrom } from '../../src/upstream/tokenCache';
import { UpstreamError } from '../../src/upstream/errors';
import type { TokenGrant } from '../../src/upstream/tokenEndpoint';
import type { TenantCredentials } from '../../src/config';
import { tokenGrant } from '../helpers/fixtures';

const tenant: TenantCredentials = { tenantId: 't1', clientId: 'c1', clientSecret: 's1', scope: 'shifts.read' };

/** A frozen clock and a token endpoint that counts, each test drives time itself. */
function setup(lifetimeSeconds = 900) {
  let now = 1_000_000;
  let issued = 0;
  const pending: Array<() => void> = [];
  let manual = false;
  let failWith: UpstreamError | undefined;
  const fetchToken = jest.fn(async (): Promise<TokenGrant> => {
    if (manual) await new Promise<void>((resolve) => pending.push(resolve));
    if (failWith) throw failWith;
    issued += 1;
    return { accessToken: `token-${issued}`, tenantId: 't1', apiBase: 'https://s.example.com', scopes: ['shifts.read'], obtainedAt: now, expiresAt: now + lifetimeSeconds * 1000 };
  });
  const cache = new TokenCache({ tenants: [tenant], fetchToken, now: () => now });
  return {
    cache,
    fetchToken,
    advance: (ms: number) => (now += ms),
    hold: () => (manual = true),
    releaseAll: () => pending.splice(0).forEach((resolve) => resolve()),
    failWith: (error: UpstreamError | undefined) => (failWith = error),
  };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('TokenCache', () => {
  it('shares one token request among 200 concurrent callers', async () => {
    const t = setup();
    t.hold();
    const all = Promise.all(Array.from({ length: 200 }, () => t.cache.getToken('t1')));
    await flush();
    t.releaseAll();
    const tokens = await all;
    expect(new Set(tokens.map((g) => g.accessToken))).toEqual(new Set(['token-1']));
    expect(t.fetchToken).toHaveBeenCalledTimes(1);
  });

  it('reuses the token until shortly before expiry, then fetches exactly one more', async () => {
    const t = setup(900);
    await t.cache.getToken('t1');
    t.advance(600_000);
    expect((await t.cache.getToken('t1')).accessToken).toBe('token-1');
    expect(t.fetchToken).toHaveBeenCalledTimes(1);
    t.advance(300_000);
    expect((await t.cache.getToken('t1')).accessToken).toBe('token-2');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
  });

  it('keeps a margin that shrinks with short lifetimes (a 4 s token is used for 3.6 s)', () => {
    const grant = (life: number): TokenGrant => tokenGrant({ accessToken: 'x', tenantId: 't', apiBase: 'x', obtainedAt: 0, expiresAt: life * 1000 });
    expect(usableUntil(grant(4))).toBe(3_600);
    expect(usableUntil(grant(900))).toBe(870_000);
    expect(refreshFrom(grant(900))).toBe(675_000);
  });

  it('refreshes ahead of need in the background, and callers keep the current token meanwhile', async () => {
    const t = setup(100);
    await t.cache.getToken('t1');
    t.advance(80_000); // past 75 %
    t.hold();
    expect((await t.cache.getToken('t1')).accessToken).toBe('token-1');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    expect((await t.cache.getToken('t1')).accessToken).toBe('token-1');
    t.releaseAll();
    await flush();
    expect((await t.cache.getToken('t1')).accessToken).toBe('token-2');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
  });

  it('renews once for all callers that saw the same 401', async () => {
    const t = setup();
    const first = await t.cache.getToken('t1');
    const renewed = await Promise.all(Array.from({ length: 50 }, () => t.cache.renewAfterUnauthorized('t1', first)));
    expect(new Set(renewed.map((g) => g.accessToken))).toEqual(new Set(['token-2']));
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    // A late 401 for the old token does not drop the new one.
    expect((await t.cache.renewAfterUnauthorized('t1', first)).accessToken).toBe('token-2');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
  });

  it('does not fetch a token per request when fresh tokens keep getting 401', async () => {
    const t = setup();
    const first = await t.cache.getToken('t1');
    const second = await t.cache.renewAfterUnauthorized('t1', first);
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    for (let i = 0; i < 5; i += 1) {
      await expect(t.cache.renewAfterUnauthorized('t1', second)).rejects.toMatchObject({ code: 'UPSTREAM_UNAUTHORIZED' });
    }
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    t.advance(10_001);
    await expect(t.cache.renewAfterUnauthorized('t1', second)).resolves.toMatchObject({ accessToken: 'token-3' });
  });

  it('does not hammer a token endpoint that refuses the credentials', async () => {
    const t = setup();
    t.failWith(new UpstreamError('UPSTREAM_UNAUTHORIZED', 'refused'));
    for (let i = 0; i < 20; i += 1) await expect(t.cache.getToken('t1')).rejects.toMatchObject({ code: 'UPSTREAM_UNAUTHORIZED' });
    expect(t.fetchToken).toHaveBeenCalledTimes(1);
    t.failWith(undefined);
    t.advance(10_001);
    expect((await t.cache.getToken('t1')).accessToken).toBe('token-1');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
  });

  it('refuses a tenant it was not configured with', async () => {
    const t = setup();
    await expect(t.cache.getToken('other')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(t.fetchToken).not.toHaveBeenCalled();
  });
});
