import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { CHECKING, startTokenEndpointCheck, type TokenEndpointVerdict } from '../../src/upstream/token/tokenEndpointCheck';
import { as } from '../helpers/fixtures';
import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * The start-up check of WFS_AUTH_URL (src/upstream/token/tokenEndpointCheck.ts): a wrong
 * token endpoint shows in the log and in `/ready` from the start, not at the first
 * query, and `/ready` turns 200 once the endpoint answers like one.
 */

const TOKEN_PATH = '/identity/o/api/token';

type Readiness = { status: number; body: { status: string; reason?: string } };

/** `/ready` once the start-up check has its first answer (the server listens before it has one, saying "checking"). */
async function ready(subgraph: TestSubgraph): Promise<Readiness> {
  const get = async (): Promise<Readiness> => {
    const response = await request(`${new URL(subgraph.server.url).origin}/ready`);
    return { status: response.statusCode, body: (await response.body.json()) as Readiness['body'] };
  };
  let answer = await get();
  await waitFor(async () => (answer = await get()).body.reason !== CHECKING, 'the first answer of the token endpoint check');
  return answer;
}

describe('the token endpoint check against the emulator', () => {
  let emulator: Emulator;
  let subgraph: TestSubgraph | undefined;

  beforeAll(async () => {
    emulator = await startEmulator();
  });
  afterEach(async () => {
    await subgraph?.close();
    subgraph = undefined;
    emulator.clearFaults();
  });
  afterAll(async () => {
    await emulator.close();
  });

  it('with WFS_AUTH_URL set to the full token URL: /ready is 503 saying why without naming the URL, the log names it, and a query fails without naming it', async () => {
    const authUrl = `${emulator.authUrl}${TOKEN_PATH}`;
    subgraph = await startTestSubgraph({}, { WFS_AUTH_URL: authUrl }, {}, emulator);
    const tried = `${authUrl}${TOKEN_PATH}`;

    const answer = await ready(subgraph);
    expect(answer.status).toBe(503);
    expect(answer.body.status).toBe('not ready');
    // /ready needs no identity: it says what to check, and the log says where.
    expect(answer.body.reason).toBe('the token endpoint answered 404: check WFS_AUTH_URL (the log names the URL tried)');
    expect(JSON.stringify(answer.body)).not.toContain(new URL(emulator.authUrl).host);
    expect(JSON.stringify(answer.body)).not.toContain(TOKEN_PATH);
    const checkLine = subgraph.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => String(line['msg']).startsWith('token endpoint'));
    expect(checkLine).toMatchObject({ level: 50, tokenUrl: tried });
    expect(checkLine?.['msg']).toContain(
      `token endpoint ${tried} answered 404: WFS_AUTH_URL must be the identity provider's base URL, without ${TOKEN_PATH} (the subgraph appends it)`,
    );

    const tenant = emulator.tenants[0]!;
    const response = await subgraph.query('{ locations(first: 1) { nodes { id } } }', {}, as(tenant));
    expect(errorCodes(response)).toEqual(['UPSTREAM_BAD_RESPONSE']);
    expect(JSON.stringify(response)).not.toContain(new URL(emulator.authUrl).host);
    const failure = subgraph.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line['msg'] === 'token request failed');
    expect(failure).toMatchObject({ tenantId: tenant.tenantId, tokenUrl: tried });
    for (const secret of emulator.tenants.map((t) => t.clientSecret)) expect(subgraph.logs.join('')).not.toContain(secret);
  });

  it('with the right WFS_AUTH_URL: ready at once, and the probe is no token request', async () => {
    subgraph = await startTestSubgraph({}, {}, {}, emulator);
    const tokenRequests = emulator.counters.tokenRequests;
    expect(await ready(subgraph)).toEqual({ status: 200, body: { status: 'ready' } });
    expect(emulator.counters.tokenRequests).toBe(tokenRequests);
  });

  it('stays ready through a provider that fails at start-up (a 503): an outage is not a wrong address', async () => {
    emulator.injectFault({ endpoint: 'token', status: 503, times: 1 });
    subgraph = await startTestSubgraph({}, {}, {}, emulator);
    expect((await ready(subgraph)).status).toBe(200);
  });

  it('turns ready once the token endpoint answers like one (a 404 at start-up, then a re-check)', async () => {
    emulator.injectFault({ endpoint: 'token', status: 404, times: 1 });
    subgraph = await startTestSubgraph({}, {}, {}, emulator);
    const first = await ready(subgraph);
    expect(first).toEqual({ status: 503, body: { status: 'not ready', reason: 'the token endpoint answered 404: check WFS_AUTH_URL (the log names the URL tried)' } });
    await waitFor(async () => (await ready(subgraph!)).status === 200, '/ready to turn 200');
    expect(subgraph.logs.join('')).toContain('token endpoint answers like one now: ready');
  });
});

describe('startTokenEndpointCheck', () => {
  let server: Server;
  let authUrl: string;
  const bodies: string[] = [];
  let answers: number[] = [];
  /** How long the endpoint holds its answers. Time is the subject: a probe still in flight. */
  let answerDelayMs = 0;
  const dispatcher = new Agent({ keepAliveTimeout: 10 });

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += String(chunk)));
      req.on('end', () => {
        bodies.push(`${req.method} ${req.url} ${body}`);
        const status = answers.shift() ?? 400;
        setTimeout(() => res.writeHead(status, { 'content-type': 'application/json' }).end('{"error":"invalid_request"}'), answerDelayMs);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    authUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/auth`;
  });
  afterAll(async () => {
    await dispatcher.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    bodies.length = 0;
    answerDelayMs = 0;
  });

  it('sends no credentials, and probes again after each wrong answer until the endpoint is right', async () => {
    answers = [404, 302, 405];
    const verdicts: TokenEndpointVerdict[] = [];
    const check = startTokenEndpointCheck({ authUrl, dispatcher, retryDelaysMs: [1], onVerdict: (verdict) => verdicts.push(verdict) });
    try {
      expect(await check.firstVerdict).toMatchObject({ ok: false, url: `${authUrl}${TOKEN_PATH}` });
      await waitFor(() => check.problem() === undefined, 'the fourth probe');
      expect(verdicts.map((verdict) => verdict.ok)).toEqual([false, false, false, true]);
      expect(bodies).toEqual(Array(4).fill(`POST /auth${TOKEN_PATH} grant_type=client_credentials`));
    } finally {
      check.close();
    }
  });

  it('says what a 404 means when WFS_AUTH_URL is the base URL', async () => {
    answers = [404];
    const check = startTokenEndpointCheck({ authUrl, dispatcher, retryDelaysMs: [60_000] });
    try {
      await check.firstVerdict;
      expect(check.problem()).toBe('the token endpoint answered 404: check WFS_AUTH_URL (the log names the URL tried)');
      expect(await check.firstVerdict).toMatchObject({
        problem: `token endpoint ${authUrl}${TOKEN_PATH} answered 404: is WFS_AUTH_URL the identity provider's base URL (without ${TOKEN_PATH})?`,
      });
    } finally {
      check.close();
    }
  });

  it('accepts whatever does not show a wrong address: a refusal (401, 403, 422), or a provider that is busy or failing (429, 503)', async () => {
    for (const status of [401, 403, 422, 429, 503]) {
      answers = [status];
      const check = startTokenEndpointCheck({ authUrl, dispatcher });
      try {
        expect(await check.firstVerdict).toEqual({ ok: true, url: `${authUrl}${TOKEN_PATH}`, status });
        expect(check.problem()).toBeUndefined();
      } finally {
        check.close();
      }
    }
  });

  it('is settled by a real token obtained while the probe still says the address is wrong', async () => {
    answers = [404];
    const check = startTokenEndpointCheck({ authUrl, dispatcher, retryDelaysMs: [60_000] });
    try {
      await check.firstVerdict;
      expect(check.problem()).toMatch(/answered 404/);
      check.confirmed();
      expect(check.problem()).toBeUndefined();
    } finally {
      check.close();
    }
  });

  it('stays settled when a probe still in flight at confirmation then says the address is wrong', async () => {
    answers = [404];
    answerDelayMs = 200;
    const verdicts: TokenEndpointVerdict[] = [];
    const check = startTokenEndpointCheck({ authUrl, dispatcher, retryDelaysMs: [1], onVerdict: (verdict) => verdicts.push(verdict) });
    try {
      expect(check.problem()).toBe(CHECKING);
      check.confirmed();
      expect(await check.firstVerdict).toMatchObject({ ok: false });
      expect(check.problem()).toBeUndefined();
      // No verdict is reported and no new probe is scheduled after the confirmation. A
      // control, the same check left unconfirmed, shows when that probe would have come:
      // its second probe, after an answer as slow and the same 1 ms delay.
      answers = [404, 404];
      const control = startTokenEndpointCheck({ authUrl: `${authUrl}/control`, dispatcher, retryDelaysMs: [1] });
      try {
        await waitFor(() => bodies.filter((body) => body.includes('/control/')).length >= 2, "the unconfirmed control's second probe");
      } finally {
        control.close();
      }
      expect(verdicts).toEqual([]);
      expect(bodies.filter((body) => !body.includes('/control/'))).toHaveLength(1);
      expect(check.problem()).toBeUndefined();
    } finally {
      check.close();
    }
  });

  it('names an endpoint that cannot be reached', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const check = startTokenEndpointCheck({ authUrl: `http://127.0.0.1:${port}`, dispatcher, retryDelaysMs: [60_000] });
    try {
      await check.firstVerdict;
      expect(check.problem()).toBe('the token endpoint could not be reached (refused): check WFS_AUTH_URL (the log names the URL tried)');
      expect(await check.firstVerdict).toMatchObject({ problem: `token endpoint http://127.0.0.1:${port}${TOKEN_PATH} could not be reached (refused)` });
    } finally {
      check.close();
    }
  });
});
