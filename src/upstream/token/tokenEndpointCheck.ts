import { request, type Dispatcher } from 'undici';
import { causeOfNetworkError } from '../failureCause';
import { TOKEN_PATH, tokenUrl } from './tokenEndpoint';
import { timeLimit } from '../transport/timeLimit';

/**
 * Whether `WFS_AUTH_URL` leads to a token endpoint, known at start-up instead of at the
 * first query. The probe is a client-credentials POST that names no client: it sends
 * no secret (so a wrong URL receives none) and obtains no token, and a token endpoint
 * refuses it with 400 or 401 (RFC 6749 5.2, `invalid_request` / `invalid_client`; 403
 * from providers that say so). The status decides, never the body (docs/upstream.md,
 * "Error bodies"). Only what shows a wrong address keeps readiness off: 404, 405 or 410
 * (a wrong path), a redirect, no connection. A real token obtained meanwhile settles it
 * too (`confirmed`).
 *
 * A wrong verdict has two texts: `problem`, for the log, names the URL tried; `reason`,
 * what `/ready` answers to anyone who asks (it needs no identity), names neither the
 * identity provider's host nor its path.
 */
export type TokenEndpointVerdict =
  | { readonly ok: true; readonly url: string; readonly status: number }
  | { readonly ok: false; readonly url: string; readonly problem: string; readonly reason: string };

/** `/ready`'s reason until the first probe has its answer. */
export const CHECKING = 'checking the token endpoint';

const SEE_LOG = 'check WFS_AUTH_URL (the log names the URL tried)';

export interface ProbeOptions {
  readonly dispatcher: Dispatcher;
  readonly signal?: AbortSignal;
}

export async function probeTokenEndpoint(authUrl: string, options: ProbeOptions): Promise<TokenEndpointVerdict> {
  const url = tokenUrl(authUrl);
  const failed = (problem: string, reason: string): TokenEndpointVerdict => ({ ok: false, url, problem: `token endpoint ${url} ${problem}`, reason: `the token endpoint ${reason}: ${SEE_LOG}` });
  let response: Dispatcher.ResponseData;
  try {
    response = await request(url, {
      method: 'POST',
      dispatcher: options.dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: 'grant_type=client_credentials',
      ...(options.signal && { signal: options.signal }),
    });
  } catch (error) {
    const cause = causeOfNetworkError(error, options.signal);
    return failed(`could not be reached (${cause})`, `could not be reached (${cause})`);
  }
  await response.body.dump().catch(() => undefined);
  const status = response.statusCode;
  if (status === 404 || status === 405 || status === 410) {
    const doubled = new URL(authUrl).pathname.replace(/\/+$/, '').endsWith(TOKEN_PATH);
    return failed(
      doubled
        ? `answered ${status}: WFS_AUTH_URL must be the identity provider's base URL, without ${TOKEN_PATH} (the subgraph appends it)`
        : `answered ${status}: is WFS_AUTH_URL the identity provider's base URL (without ${TOKEN_PATH})?`,
      `answered ${status}`,
    );
  }
  if (status >= 300 && status < 400) {
    return failed(`answered ${status} (a redirect, which token requests do not follow): is WFS_AUTH_URL the provider's own address?`, `answered ${status} (a redirect)`);
  }
  // Anything else (the 400 or 401 of a token endpoint, another 4xx, a 429 or 5xx of a
  // provider that is busy or failing, even a 2xx) is a server at that path that is not plainly wrong: readiness is about the
  // configuration, and an outage of the provider is the token cache's to ride out.
  return { ok: true, url, status };
}

export interface TokenEndpointCheckOptions extends Omit<ProbeOptions, 'signal'> {
  readonly authUrl: string;
  /** Each probe's own time limit. */
  readonly timeoutMs?: number;
  /** Pauses between probes while the endpoint is not right; the last repeats. */
  readonly retryDelaysMs?: readonly number[];
  /** Every verdict, for the log. */
  readonly onVerdict?: (verdict: TokenEndpointVerdict) => void;
}

export interface TokenEndpointCheck {
  /**
   * What is wrong while the endpoint has not yet answered like a token endpoint, in
   * words fit for `/ready` (no URL); undefined once it has.
   */
  problem(): string | undefined;
  /** A real token was obtained from the endpoint: it is right, whatever the probe said. */
  confirmed(): void;
  /** Settles with the first verdict (a probe ends within its time limit). */
  readonly firstVerdict: Promise<TokenEndpointVerdict>;
  close(): void;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_RETRY_DELAYS_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

/**
 * Probes at once, then again after each failure (1 s, 2 s, 5 s, 10 s, then every 30 s)
 * until the endpoint answers like one; after that it stays right, so a later outage of
 * the provider is the token cache's business, not readiness's.
 */
export function startTokenEndpointCheck(options: TokenEndpointCheckOptions): TokenEndpointCheck {
  const delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const controller = new AbortController();
  let problem: string | undefined = CHECKING;
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  // Once a real token came from the endpoint, a probe still in flight has nothing left
  // to say: its verdict (a 404 from a flapping proxy, a timeout) must not undo readiness.
  let settled = false;

  const probe = async (): Promise<TokenEndpointVerdict> => {
    // The probe's own time limit within the check's, disarmed once it has its verdict.
    const limit = timeLimit(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, controller.signal);
    const verdict = await probeTokenEndpoint(options.authUrl, { dispatcher: options.dispatcher, signal: limit.signal }).finally(limit.done);
    if (controller.signal.aborted || settled) return verdict;
    problem = verdict.ok ? undefined : verdict.reason;
    options.onVerdict?.(verdict);
    if (!verdict.ok) {
      const delay = delays[Math.min(failures, delays.length - 1)] ?? DEFAULT_RETRY_DELAYS_MS[0]!;
      failures += 1;
      timer = setTimeout(() => void probe().catch(() => undefined), delay);
      timer.unref();
    }
    return verdict;
  };

  return {
    problem: () => problem,
    confirmed() {
      settled = true;
      problem = undefined;
      failures = 0;
      clearTimeout(timer);
    },
    firstVerdict: probe(),
    close() {
      controller.abort();
      clearTimeout(timer);
    },
  };
}
