import { TokenCache } from '../../src/upstream/token/tokenCache';
import { usableUntil, refreshFrom } from '../../src/upstream/token/tokenMoments';
import { UpstreamError } from '../../src/upstream/errors';
import type { TokenGrant } from '../../src/upstream/token/tokenEndpoint';
import { TENANT, TENANT_ID, tokenGrant } from '../helpers/fixtures';

const tenant = TENANT;

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
    return { accessToken: `token-${issued}`, tenantId: TENANT_ID, apiBase: 'https://s.example.com', scopes: ['shifts.read'], obtainedAt: now, expiresAt: now + lifetimeSeconds * 1000 };
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
    const all = Promise.all(Array.from({ length: 200 }, () => t.cache.getToken(TENANT_ID)));
    await flush();
    t.releaseAll();
    const tokens = await all;
    expect(new Set(tokens.map((g) => g.accessToken))).toEqual(new Set(['token-1']));
    expect(t.fetchToken).toHaveBeenCalledTimes(1);
  });

  it('reuses the token until shortly before expiry, then fetches exactly one more', async () => {
    const t = setup(900);
    await t.cache.getToken(TENANT_ID);
    t.advance(600_000);
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-1');
    expect(t.fetchToken).toHaveBeenCalledTimes(1);
    t.advance(300_000);
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-2');
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
    await t.cache.getToken(TENANT_ID);
    t.advance(80_000); // past 75 %
    t.hold();
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-1');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-1');
    t.releaseAll();
    await flush();
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-2');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
  });

  it('renews once for all callers that saw the same 401', async () => {
    const t = setup();
    const first = await t.cache.getToken(TENANT_ID);
    const renewed = await Promise.all(Array.from({ length: 50 }, () => t.cache.renewAfterUnauthorized(TENANT_ID, first)));
    expect(new Set(renewed.map((g) => g.accessToken))).toEqual(new Set(['token-2']));
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    // A late 401 for the old token does not drop the new one.
    expect((await t.cache.renewAfterUnauthorized(TENANT_ID, first)).accessToken).toBe('token-2');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
  });

  it('never hands back a refused token, also to a caller whose 401 came after another caller had started the renewal', async () => {
    // An endpoint that hands out the same token again (as some identity providers do until it expires), then a new one.
    const answers = ['token-1', 'token-1', 'token-2'];
    const gates: Array<() => void> = [];
    const fetchToken = jest.fn(async (): Promise<TokenGrant> => {
      const accessToken = answers.shift()!;
      if (fetchToken.mock.calls.length === 2) await new Promise<void>((resolve) => gates.push(resolve));
      return tokenGrant({ accessToken, tenantId: TENANT_ID, lifeMs: 900_000 });
    });
    const cache = new TokenCache({ tenants: [tenant], fetchToken });
    const first = await cache.getToken(TENANT_ID);
    cache.markUsed(first);
    const a = cache.renewAfterUnauthorized(TENANT_ID, first); // drops token-1, asks again (held)
    await flush();
    const b = cache.renewAfterUnauthorized(TENANT_ID, first); // another caller's 401 on token-1: shares that request
    gates.splice(0).forEach((open) => open());
    expect((await a).accessToken).toBe('token-2');
    expect((await b).accessToken).toBe('token-2');
    expect(fetchToken).toHaveBeenCalledTimes(3);
  });

  it('renews at once when a token that served calls is refused: two revocations in a row lock nobody out', async () => {
    const t = setup();
    const first = await t.cache.getToken(TENANT_ID);
    t.cache.markUsed(first);
    const second = await t.cache.renewAfterUnauthorized(TENANT_ID, first);
    expect(second.accessToken).toBe('token-2');
    t.cache.markUsed(second);
    // Revoked again, a moment later: renewed at once, no cool-down.
    const third = await t.cache.renewAfterUnauthorized(TENANT_ID, second);
    expect(third.accessToken).toBe('token-3');
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-3');
    expect(t.fetchToken).toHaveBeenCalledTimes(3);
  });

  it('cools down on tokens refused on their first use, 1 s doubling to 10 s, one token request per cool-down', async () => {
    const t = setup();
    let token = await t.cache.getToken(TENANT_ID);
    // The first refusal renews at once (a stale token is no proof the credentials are wrong).
    token = await t.cache.renewAfterUnauthorized(TENANT_ID, token);
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    const cooldowns: number[] = [];
    for (let round = 0; round < 6; round += 1) {
      await expect(t.cache.renewAfterUnauthorized(TENANT_ID, token)).rejects.toMatchObject({ code: 'UPSTREAM_UNAUTHORIZED' });
      const requests = t.fetchToken.mock.calls.length;
      // Every query during the cool-down fails fast, without a token request.
      let waited = 0;
      for (;;) {
        const outcome = await t.cache.getToken(TENANT_ID).then((g) => g, (e: UpstreamError) => e);
        if (!(outcome instanceof UpstreamError)) {
          token = outcome;
          break;
        }
        expect(outcome.code).toBe('UPSTREAM_UNAUTHORIZED');
        expect(t.fetchToken).toHaveBeenCalledTimes(requests);
        t.advance(250);
        waited += 250;
      }
      expect(t.fetchToken).toHaveBeenCalledTimes(requests + 1);
      cooldowns.push(waited);
    }
    expect(cooldowns).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
    // A call that succeeds ends the streak: the next refusal renews at once.
    t.cache.markUsed(token);
    await expect(t.cache.renewAfterUnauthorized(TENANT_ID, token)).resolves.toMatchObject({ accessToken: expect.any(String) });
  });

  it('keeps serving the still-valid token while the endpoint answers 503, with spaced attempts', async () => {
    const t = setup(100);
    await t.cache.getToken(TENANT_ID);
    t.advance(76_000); // inside the refresh window (75 % .. 90 % of 100 s)
    t.failWith(new UpstreamError('UPSTREAM_UNAVAILABLE', 'the token endpoint answered 503', { status: 503 }));
    const attemptsAt: number[] = [];
    let served = 0;
    for (let ms = 0; ms < 13_000; ms += 100) {
      const before = t.fetchToken.mock.calls.length;
      expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-1');
      served += 1;
      await flush();
      if (t.fetchToken.mock.calls.length > before) attemptsAt.push(ms);
      t.advance(100);
    }
    expect(served).toBe(130);
    // 1.5 s, then 3 s, then 6 s apart: never one per query.
    const gaps = attemptsAt.slice(1).map((at, i) => at - attemptsAt[i]!);
    expect(gaps).toEqual([1_500, 3_000, 6_000]);
  });

  it('honours Retry-After from the token endpoint: no attempt inside the window, fail fast with the seconds left', async () => {
    const t = setup();
    t.failWith(new UpstreamError('UPSTREAM_UNAVAILABLE', 'the token endpoint answered 503', { status: 503, retryAfterSeconds: 30 }));
    await expect(t.cache.getToken(TENANT_ID)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    t.advance(10_000);
    await expect(t.cache.getToken(TENANT_ID)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', details: { retryAfterSeconds: 20 } });
    t.failWith(new UpstreamError('UPSTREAM_RATE_LIMITED', 'rate limited', { status: 429, retryAfterSeconds: 30 }));
    t.advance(19_000);
    await expect(t.cache.getToken(TENANT_ID)).rejects.toMatchObject({ details: { retryAfterSeconds: 1 } });
    expect(t.fetchToken).toHaveBeenCalledTimes(1);
    t.advance(1_000);
    await expect(t.cache.getToken(TENANT_ID)).rejects.toMatchObject({ code: 'UPSTREAM_RATE_LIMITED', details: { retryAfterSeconds: 30 } });
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
  });

  it('does not hold a query on a token request that outlived the endpoint\'s usual answer time; that request serves the next query', async () => {
    const t = setup(100);
    await t.cache.getToken(TENANT_ID); // answered at once: the usual answer time is short
    t.advance(80_000);
    t.hold(); // the endpoint hangs from before the refresh point
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-1');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    t.advance(20_000); // the token is no longer usable
    for (let i = 0; i < 5; i += 1) await expect(t.cache.getToken(TENANT_ID)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
    t.releaseAll();
    await flush();
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-2');
  });

  it('waits about a second, not more, on a retry to an endpoint whose last attempt failed', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'queueMicrotask', 'nextTick'] });
    try {
      const t = setup();
      t.failWith(new UpstreamError('UPSTREAM_UNAVAILABLE', 'timed out'));
      await expect(t.cache.getToken(TENANT_ID)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
      t.failWith(undefined);
      t.advance(1_500);
      t.hold();
      let outcome: unknown;
      const waiting = t.cache.getToken(TENANT_ID).then((g) => (outcome = g), (e: unknown) => (outcome = e));
      jest.advanceTimersByTime(999);
      await flush();
      expect(outcome).toBeUndefined();
      jest.advanceTimersByTime(1);
      await waiting;
      expect(outcome).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
      // The request went on; its answer serves the next query.
      t.releaseAll();
      await flush();
      expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-1');
    } finally {
      jest.useRealTimers();
    }
  });

  it('lets a cold tenant wait for a slow but working endpoint', async () => {
    const t = setup();
    t.hold();
    const first = t.cache.getToken(TENANT_ID);
    await flush();
    t.advance(5_000); // five seconds for the first token
    t.releaseAll();
    expect((await first).accessToken).toBe('token-1');
  });

  it('does not hammer a token endpoint that refuses the credentials', async () => {
    const t = setup();
    t.failWith(new UpstreamError('UPSTREAM_UNAUTHORIZED', 'refused'));
    for (let i = 0; i < 20; i += 1) await expect(t.cache.getToken(TENANT_ID)).rejects.toMatchObject({ code: 'UPSTREAM_UNAUTHORIZED' });
    expect(t.fetchToken).toHaveBeenCalledTimes(1);
    t.failWith(undefined);
    t.advance(10_001);
    expect((await t.cache.getToken(TENANT_ID)).accessToken).toBe('token-1');
    expect(t.fetchToken).toHaveBeenCalledTimes(2);
  });

  it('refuses a tenant it was not configured with', async () => {
    const t = setup();
    await expect(t.cache.getToken('other')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(t.fetchToken).not.toHaveBeenCalled();
  });
});
