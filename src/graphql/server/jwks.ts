/**
 * The JWT verification keys, fetched from WFS_JWKS_URL and cached (jose's remote JWKS),
 * with a hook for the operator's warning when they go stale.
 */
import { createRemoteJWKSet, customFetch, errors, type FetchImplementation, type JWTVerifyGetKey } from 'jose';

export interface JwksOptions {
  /** How long a fetched key set is used before it is fetched again, in ms. Default 600 000 (jose's). */
  readonly cacheMaxAgeMs?: number;
  /** How long after its last successful fetch a key set may still stand in while the provider fails, in ms. Default 3 600 000. */
  readonly maxStaleMs?: number;
  /** A JWKS fetch that takes longer fails (then the last good set stands in), in ms. Default 3 000. */
  readonly timeoutMs?: number;
  /** Epoch ms, for the staleness bound. Default `Date.now`. */
  readonly now?: () => number;
  /** Told each time the last good key set stands in for a failed fetch. */
  readonly onStale?: (error: unknown, ageMs: number) => void;
  /** For tests: the fetch the key set is loaded with. Default the global fetch. */
  readonly fetch?: typeof fetch;
}

/**
 * jose's remote JWKS (`createRemoteJWKSet`: caching, one shared fetch, a refetch on an
 * unknown `kid` with a cooldown), made to ride out an identity-provider outage
 * (stale-if-error): when a reload fails (unreachable, timeout, non-200, not a key set),
 * the last key set fetched successfully is handed to jose instead, for at most
 * `maxStaleMs` after that fetch. jose then keeps it for another cache period, so
 * requests neither wait on the dead provider each time nor all fail; past the bound
 * the failure is the caller's (UNAUTHENTICATED), as before.
 */
export function createJwksKeys(url: URL, options: JwksOptions = {}): JWTVerifyGetKey {
  const now = options.now ?? Date.now;
  const maxStaleMs = options.maxStaleMs ?? 3_600_000;
  const fetchKeySet = options.fetch ?? fetch;
  let lastGood: { body: string; fetchedAt: number } | undefined;

  const standIn = (error: unknown): Response => {
    const age = lastGood ? now() - lastGood.fetchedAt : Infinity;
    if (!lastGood || age > maxStaleMs) throw error;
    options.onStale?.(error, age);
    return keySetResponse(lastGood.body);
  };
  const staleIfError: FetchImplementation = async (href, init) => {
    let response: Response;
    try {
      response = await fetchKeySet(href, init);
    } catch (error) {
      return standIn(error);
    }
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => undefined);
      return standIn(new errors.JOSEError(`Expected 200 OK from the JSON Web Key Set HTTP response, got ${response.status}`));
    }
    let body: string;
    try {
      body = await response.text();
    } catch (error) {
      return standIn(error);
    }
    if (!isKeySet(body)) return standIn(new errors.JOSEError('The JSON Web Key Set HTTP response is not a key set'));
    lastGood = { body, fetchedAt: now() };
    return keySetResponse(body);
  };

  return createRemoteJWKSet(url, {
    timeoutDuration: options.timeoutMs ?? 3_000,
    cooldownDuration: 30_000,
    cacheMaxAge: options.cacheMaxAgeMs ?? 600_000,
    [customFetch]: staleIfError,
  });
}

function keySetResponse(body: string): Response {
  return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
}

/** A JSON object with a `keys` array: what jose accepts as a JWKS (it checks each key itself). */
function isKeySet(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { keys?: unknown };
    return typeof parsed === 'object' && parsed !== null && Array.isArray(parsed.keys);
  } catch {
    return false;
  }
}
