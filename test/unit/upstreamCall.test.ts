import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { statusError, rateLimited, shardBusy } from '../../src/upstream/call/callErrors';
import { exchange, type Outcome } from '../../src/upstream/call/exchange';
import { listRequest, type PageRequest } from '../../src/upstream/call/request';
import { afterRateLimit, afterRetryAfter, afterShardFault, throughWindows, type Tries } from '../../src/upstream/call/retries';
import { classifyStatus } from '../../src/upstream/call/statusClass';
import { UpstreamError } from '../../src/upstream/errors';
import type { UpstreamAttempt } from '../../src/upstream/observer';
import { locations, type LocationRecord as Location } from '../../src/upstream/resources';
import { RetryPolicy } from '../../src/upstream/resilience/retry';
import type { UnauthorizedRule } from '../../src/upstream/token/unauthorized';
import { freePort, tokenGrant } from '../helpers/fixtures';

/**
 * The steps of one page call (src/upstream/call/): what each status the upstream can
 * answer means and which error it ends with, the request one page is sent as, the
 * exchange against a real HTTP server, and the retry decisions.
 */

const LIST = 'locations';

/**
 * Every status the upstream can answer, in one place: its class, the code the call
 * ends with when it ends on it, and whether it is retried. 401 and 429 end the call
 * only after their own retries (token/unauthorized.ts: UPSTREAM_UNAUTHORIZED;
 * `rateLimited`: UPSTREAM_RATE_LIMITED).
 */
const STATUSES: ReadonlyArray<readonly [status: number, kind: string, code: string | undefined, retried: boolean]> = [
  [200, 'ok', undefined, false],
  [201, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [204, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [301, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [302, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [304, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [400, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [401, 'unauthorized', 'UPSTREAM_UNAUTHORIZED', true],
  [403, 'failed', 'FORBIDDEN', false],
  [404, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [405, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [409, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [410, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [422, 'failed', 'UPSTREAM_BAD_RESPONSE', false],
  [429, 'rate-limited', 'UPSTREAM_RATE_LIMITED', true],
  [500, 'shard-fault', 'UPSTREAM_UNAVAILABLE', true],
  [501, 'shard-fault', 'UPSTREAM_UNAVAILABLE', true],
  [502, 'shard-fault', 'UPSTREAM_UNAVAILABLE', true],
  [503, 'shard-fault', 'UPSTREAM_UNAVAILABLE', true],
  [504, 'shard-fault', 'UPSTREAM_UNAVAILABLE', true],
];

describe('what each upstream status means (classifyStatus, statusError)', () => {
  it.each(STATUSES)('%i is %s, ending the call with %s (retried: %p)', (status, kind, code, retried) => {
    const verdict = classifyStatus(status, undefined);
    expect(verdict.kind).toBe(kind);
    expect(['unauthorized', 'rate-limited', 'shard-fault'].includes(verdict.kind)).toBe(retried);
    if (verdict.kind === 'failed' || verdict.kind === 'shard-fault') {
      expect(verdict.code).toBe(code);
      const error = statusError(LIST, status, verdict.code);
      expect(error).toMatchObject({ code, details: { status } });
      expect(error.message).toContain(String(status));
      expect(error.message).toContain(LIST);
    }
    if (verdict.kind === 'rate-limited') expect(rateLimited('t1', undefined).code).toBe(code);
  });

  it('keeps Retry-After on a 429 and a 503 only', () => {
    expect(classifyStatus(429, 7)).toEqual({ kind: 'rate-limited', retryAfterSeconds: 7 });
    expect(classifyStatus(503, 7)).toEqual({ kind: 'shard-fault', code: 'UPSTREAM_UNAVAILABLE', retryAfterSeconds: 7 });
    expect(classifyStatus(502, 7)).toEqual({ kind: 'shard-fault', code: 'UPSTREAM_UNAVAILABLE', retryAfterSeconds: undefined });
    expect(classifyStatus(500, 7)).toMatchObject({ retryAfterSeconds: undefined });
  });

  it('says a 403 is a missing scope', () => {
    expect(statusError(LIST, 403, 'FORBIDDEN').message).toBe('the upstream refused access to locations (403): the tenant lacks a scope for it');
  });
});

describe('the request of one page (listRequest)', () => {
  const page = (overrides: Partial<PageRequest<Location>> = {}): PageRequest<Location> => ({ resource: locations, ref: null, pageSize: 50, query: undefined, ...overrides });
  const grant = tokenGrant({ accessToken: 'tok-1', apiBase: 'https://shard-1.example.com' });

  it('goes to the token’s shard with its bearer token and the page size', () => {
    const sent = listRequest(grant, page());
    expect(new URL(sent.url).origin).toBe('https://shard-1.example.com');
    expect(new URL(sent.url).pathname).toBe(locations.path);
    expect(new URL(sent.url).searchParams.get('page_size')).toBe('50');
    expect(sent.headers).toEqual({ authorization: 'Bearer tok-1', accept: 'application/json' });
    expect(sent.pageSize).toBe(50);
  });

  it('adds the resource’s query to the first page only', () => {
    expect(new URL(listRequest(grant, page({ query: { active: 'true' } })).url).searchParams.get('active')).toBe('true');
    const next = listRequest(grant, page({ ref: 'cursor=abc&page_size=7', query: { active: 'true' } }));
    expect(new URL(next.url).searchParams.get('active')).toBeNull();
    expect(next.pageSize).toBe(7); // the reference's own page size
    expect(listRequest(grant, page({ ref: 'cursor=abc' })).pageSize).toBe(50);
  });

  it('makes the Authorization header once per token', () => {
    expect(listRequest(grant, page()).headers.authorization).toBe(listRequest(grant, page({ pageSize: 10 })).headers.authorization);
    expect(listRequest(tokenGrant({ accessToken: 'tok-2' }), page()).headers.authorization).toBe('Bearer tok-2');
  });
});

describe('one exchange against a real HTTP server (exchange)', () => {
  let server: Server;
  let origin: string;
  let answer: (request: IncomingMessage, response: ServerResponse) => void;
  const agent = new Agent({ connections: 4 });

  beforeAll(async () => {
    server = createServer((request, response) => answer(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await agent.close();
  });

  async function send(options: { signal?: AbortSignal; timeoutMs?: number; apiBase?: string } = {}): Promise<{ outcome: Outcome<Location>; attempts: UpstreamAttempt[] }> {
    const attempts: UpstreamAttempt[] = [];
    const outcome = await exchange({
      page: { resource: locations, ref: null, pageSize: 25, query: undefined },
      grant: tokenGrant({ apiBase: options.apiBase ?? origin }),
      dispatcher: agent,
      timeoutMs: options.timeoutMs ?? 10_000,
      signal: options.signal ?? new AbortController().signal,
      report: (attempt) => attempts.push(attempt),
    });
    return { outcome, attempts };
  }

  it.each(STATUSES.filter(([status]) => status !== 200))('answers %i as %s', async (status, kind, code) => {
    answer = (_request, response) => {
      response.writeHead(status, status === 503 || status === 429 ? { 'retry-after': '3' } : {});
      response.end(status === 204 || status === 304 ? undefined : '{"error":"never read"}');
    };
    const { outcome, attempts } = await send();
    expect(outcome.kind).toBe(kind);
    if (outcome.kind === 'failed' || outcome.kind === 'shard-fault') expect(outcome.error).toMatchObject({ code, details: { status } });
    // Retry-After is sent with every 429 and 503 here, and kept on those only.
    if (outcome.kind === 'rate-limited' || outcome.kind === 'shard-fault') expect(outcome.retryAfterSeconds).toBe(status === 429 || status === 503 ? 3 : undefined);
    expect(attempts).toEqual([expect.objectContaining({ status, outcome: 'http_status', origin })]);
  });

  it('reads a 200 as the page, with the page size it asked for', async () => {
    let authorization: string | undefined;
    answer = (request, response) => {
      authorization = request.headers.authorization;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ object: 'list', data: [{ object: 'location', id: 'l1', name: 'Depot' }], has_more: false, next: null, previous: null }));
    };
    const { outcome, attempts } = await send();
    expect(outcome).toMatchObject({ kind: 'page', page: { pageSize: 25, items: [expect.objectContaining({ id: 'l1' })] } });
    expect(attempts).toEqual([expect.objectContaining({ status: 200, outcome: 'ok' })]);
    expect(authorization).toBe('Bearer token');
  });

  it('makes an attempt that runs out of its time a shard fault', async () => {
    answer = () => undefined; // never answers
    const { outcome, attempts } = await send({ timeoutMs: 50 });
    expect(outcome).toMatchObject({ kind: 'shard-fault', error: { code: 'UPSTREAM_UNAVAILABLE', details: { cause: 'timeout' } } });
    expect(attempts).toEqual([expect.objectContaining({ status: 0, outcome: 'timeout' })]);
  });

  it('makes a call its callers left a failure that is no verdict on the shard', async () => {
    const controller = new AbortController();
    answer = () => controller.abort(new Error('the request went away'));
    const { outcome, attempts } = await send({ signal: controller.signal });
    expect(outcome).toMatchObject({ kind: 'failed', error: { code: 'UPSTREAM_UNAVAILABLE', details: { momentary: true } } });
    expect(attempts).toEqual([expect.objectContaining({ status: 0, outcome: 'aborted' })]);
  });

  it('makes a shard that cannot be reached a shard fault', async () => {
    const { outcome, attempts } = await send({ apiBase: `http://127.0.0.1:${await freePort()}` });
    expect(outcome).toMatchObject({ kind: 'shard-fault', error: { code: 'UPSTREAM_UNAVAILABLE' } });
    expect(outcome.kind === 'shard-fault' && outcome.error.message).toMatch(/could not be reached for locations/);
    expect(attempts).toEqual([expect.objectContaining({ status: 0, outcome: 'refused' })]);
  });
});

describe('the retry decisions (retries.ts)', () => {
  const tries = (overrides: Partial<Tries> = {}): Tries => {
    const policy = new RetryPolicy({ initialDelayMs: 10, maxDelayMs: 10 });
    return {
      maxWaitMs: 2_000,
      remaining: () => 10_000,
      transient: policy.schedule(),
      rateLimitBackoff: policy.schedule(2),
      rateLimitRetries: 0,
      maxRateLimitRetries: 2,
      unauthorized: undefined as unknown as UnauthorizedRule,
      ...overrides,
    };
  };
  const keys = { tenantId: 't1', origin: 'https://shard-1.example.com', list: LIST };

  it('backs off a 429 without Retry-After until the retries are spent', () => {
    const call = tries();
    expect(afterRateLimit(call, 't1')).toMatchObject({ reason: 'rate-limited' });
    expect(afterRateLimit(call, 't1')).toMatchObject({ reason: 'rate-limited' });
    expect(afterRateLimit(call, 't1')).toEqual({ fail: expect.objectContaining({ code: 'UPSTREAM_RATE_LIMITED' }) });
  });

  it('backs off a shard fault unless its callers went away', () => {
    const error = new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream answered 502 for locations');
    expect(afterShardFault(tries(), error, false)).toMatchObject({ reason: 'transient' });
    expect(afterShardFault(tries(), error, true)).toEqual({ fail: error });
  });

  it('waits out a Retry-After window within the request, and fails at once past it', () => {
    const refusal = (why: object) => rateLimited('t1', 1, why);
    const call = tries();
    expect(afterRetryAfter(call, 1, refusal)).toBe('now');
    expect(call.rateLimitRetries).toBe(1);
    expect(afterRetryAfter(tries(), 3, refusal)).toEqual({ fail: expect.objectContaining({ details: expect.not.objectContaining({ momentary: true }) }) });
    // A wait that was short enough, but longer than this caller had left, is the caller's moment.
    expect(afterRetryAfter(tries({ remaining: () => 500 }), 1, refusal)).toEqual({ fail: expect.objectContaining({ details: expect.objectContaining({ momentary: true }) }) });
  });

  it('goes, waits or fails fast on the windows', () => {
    expect(throughWindows({ kind: 'none' }, { kind: 'none' }, keys, tries())).toBe('go');
    expect(throughWindows({ kind: 'wait', remainingMs: 800 }, { kind: 'none' }, keys, tries())).toEqual({ waitMs: 800, reason: 'retry-after' });
    const shard = throughWindows({ kind: 'none' }, { kind: 'wait', remainingMs: 30_000 }, keys, tries());
    expect(shard).toEqual({ fail: shardBusy(keys.origin, LIST, 30, { cause: 'retry_after_window', momentary: false }) });
    const probing = throughWindows({ kind: 'probing' }, { kind: 'none' }, keys, tries());
    expect(probing).toEqual({ fail: expect.objectContaining({ code: 'UPSTREAM_RATE_LIMITED', details: expect.objectContaining({ retryAfterSeconds: 1, cause: 'retry_after_window' }) }) });
  });
});
