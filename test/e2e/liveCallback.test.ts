import { request } from 'undici';
import { makeTenant, startEmulator, type Emulator } from '../../tools/emulator';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { startCallbackRouter, type CallbackMessage, type CallbackRouter } from '../helpers/callbackRouter';
import { hourLater } from '../helpers/liveClient';
import { parseSamples, scrapeText, total } from '../helpers/metrics';
import { emulatorEnv } from '../helpers/postGraphQL';
import { waitFor } from '../helpers/waitFor';

const ROUTER_SECRET = 'callback-router-secret-for-the-e2e-test-0123456789';
const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId shift { id end } } }';

/**
 * Apollo's HTTP callback protocol (`callback/1.0`) against the built server, the test
 * acting as Apollo Router does per the published protocol: it registers a subscription
 * id and verifier, POSTs the subscription with `extensions.subscription`, and answers
 * the subgraph's `check`, `next` and `complete` at its callback endpoint (204 for a
 * subscription it knows, 400 for another verifier, 404 for one it does not know).
 */
describe('live updates over the HTTP callback protocol (built server, acting as Apollo Router)', () => {
  let emulator: Emulator;
  let router: CallbackRouter;
  /** A listening endpoint no setting names: nothing may ever reach it. */
  let elsewhere: CallbackRouter;
  let server: BuiltServer;

  const metric = async (name: string, where: Record<string, string> = {}) => total(parseSamples(await scrapeText(server.url)), name, where);
  const of = (id: string): CallbackMessage[] => router.messages.filter((message) => message.body.id === id);
  const actions = (id: string) => of(id).map((message) => message.body.action);

  /** POSTs the subscription as a router does (its secret, the caller's tenant, `extensions.subscription`). */
  const subscribe = async (subscription: Record<string, unknown>, headers: Record<string, string> = { 'router-authorization': ROUTER_SECRET, 'x-tenant-id': 'callback-co' }, query = SHIFT_CHANGES) => {
    const response = await request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json;callbackSpec=1.0', ...headers },
      body: JSON.stringify({ query, extensions: { subscription } }),
    });
    return { status: response.statusCode, body: (await response.body.json()) as { data?: null; errors?: Array<{ message: string; extensions?: { code?: string } }> } };
  };

  beforeAll(async () => {
    emulator = await startEmulator({ tenants: [makeTenant({ tenantId: 'callback-co', locationCount: 2, shiftCount: 20 }), makeTenant({ tenantId: 'callback-withdrawn', locationCount: 2, shiftCount: 10 })] });
    router = await startCallbackRouter();
    elsewhere = await startCallbackRouter();
    server = await startBuiltServer({ ...emulatorEnv(emulator), WFS_POLL_INTERVAL_SECONDS: '1', WFS_ROUTER_SECRET: ROUTER_SECRET, WFS_SUBSCRIPTION_CALLBACK_ALLOW: router.origin });
  });
  afterAll(async () => {
    await server?.stop();
    await router?.close();
    await elsewhere?.close();
    await emulator?.close();
  });

  it('checks first, answers at once, sends each change once as next, checks as a heartbeat, and ends on a 404', async () => {
    const callbackUrl = router.register('sub-1', 'verifier-1');
    const pollsBefore = await metric('wfs_live_polls_total', { outcome: 'ok' });
    const answer = await subscribe({ callbackUrl, subscriptionId: 'sub-1', verifier: 'verifier-1', heartbeatIntervalMs: 1_000 });
    expect(answer).toEqual({ status: 200, body: { data: null } });
    // The check came before the answer, with the protocol's header.
    expect(of('sub-1')[0]).toMatchObject({ path: '/callback/sub-1', protocol: 'callback/1.0', contentType: 'application/json', body: { kind: 'subscription', action: 'check', verifier: 'verifier-1' }, status: 204 });
    expect(await metric('wfs_live_transport_subscriptions', { transport: 'callback' })).toBe(1);
    await waitFor(async () => (await metric('wfs_live_polls_total', { outcome: 'ok' })) > pollsBefore, 'the baseline poll');

    // Nothing changes: heartbeats (checks) keep it alive.
    await waitFor(() => actions('sub-1').filter((action) => action === 'check').length >= 3, 'heartbeats');
    const shift = emulator.tenants[0]!.shifts[1]!;
    shift.end = hourLater(shift.end);
    await waitFor(() => actions('sub-1').includes('next'), 'the change as next');
    const polled = await metric('wfs_live_polls_total', { outcome: 'ok' });
    await waitFor(async () => (await metric('wfs_live_polls_total', { outcome: 'ok' })) >= polled + 2, 'two more polls');
    const nexts = of('sub-1').filter((message) => message.body.action === 'next');
    expect(nexts.map((message) => message.body.payload)).toEqual([{ data: { shiftChanges: { kind: 'UPDATED', nodeId: expect.any(String), shift: { id: shift.id, end: shift.end } } } }]);
    expect(nexts[0]).toMatchObject({ body: { kind: 'subscription', id: 'sub-1', verifier: 'verifier-1' }, status: 204 });

    // The router forgets it (its client left): the next message gets 404, and the subscription ends there.
    router.forget('sub-1');
    await waitFor(async () => (await metric('wfs_live_subscriptions')) === 0, 'the subscription ended on the 404');
    const sent = of('sub-1');
    expect(sent.filter((message) => message.status === 404)).toHaveLength(1);
    expect(sent[sent.length - 1]!.status).toBe(404);
    expect(actions('sub-1')).not.toContain('complete');
  });

  it('sends the error that ends a subscription as next, then complete', async () => {
    const callbackUrl = router.register('sub-2', 'verifier-2');
    const answer = await subscribe({ callbackUrl, subscriptionId: 'sub-2', verifier: 'verifier-2', heartbeatIntervalMs: 1_000 }, { 'router-authorization': ROUTER_SECRET, 'x-tenant-id': 'callback-withdrawn' });
    expect(answer.body).toEqual({ data: null });
    await waitFor(async () => (await metric('wfs_live_pollers')) >= 1 && (await metric('wfs_live_polls_total', { outcome: 'ok' })) > 0, 'polled');
    emulator.tenants.find((tenant) => tenant.tenantId === 'callback-withdrawn')!.grantedScopes = ['locations.read'];
    emulator.revokeTokens('callback-withdrawn');
    await waitFor(() => actions('sub-2').includes('complete'), 'complete');
    const sent = of('sub-2').filter((message) => message.body.action !== 'check');
    expect(sent.map((message) => message.body.action)).toEqual(['next', 'complete']);
    // The code a query of that company gets now (FORBIDDEN, or UPSTREAM_UNAUTHORIZED for the revoked token).
    expect(sent[0]!.body.payload).toEqual({ data: null, errors: [expect.objectContaining({ path: ['shiftChanges'], extensions: expect.objectContaining({ code: expect.stringMatching(/^(FORBIDDEN|UPSTREAM_UNAUTHORIZED)$/) }) })] });
    await waitFor(async () => (await metric('wfs_live_subscriptions')) === 0, 'ended');
  });

  it('does not start a subscription whose check the router refuses (a wrong verifier)', async () => {
    const refusedBefore = await metric('wfs_live_subscriptions_refused_total', { reason: 'callback_check' });
    const callbackUrl = router.register('sub-3', 'the-right-one');
    const answer = await subscribe({ callbackUrl, subscriptionId: 'sub-3', verifier: 'a-wrong-one', heartbeatIntervalMs: 1_000 });
    expect(answer.status).toBe(200);
    expect(answer.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(of('sub-3').map((message) => [message.body.action, message.status])).toEqual([['check', 400]]);
    expect(await metric('wfs_live_subscriptions')).toBe(0);
    expect(await metric('wfs_live_subscriptions_refused_total', { reason: 'callback_check' })).toBe(refusedBefore + 1);
  });

  it('refuses a callback URL outside WFS_SUBSCRIPTION_CALLBACK_ALLOW, a caller without the router secret, and a refused identity, with codes, sending nothing', async () => {
    const sentBefore = router.messages.length;
    const origin = await metric('wfs_live_subscriptions_refused_total', { reason: 'callback_origin' });
    const outside = await subscribe({ callbackUrl: `${elsewhere.origin}/callback/sub-4`, subscriptionId: 'sub-4', verifier: 'v', heartbeatIntervalMs: 1_000 });
    expect(outside.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(await metric('wfs_live_subscriptions_refused_total', { reason: 'callback_origin' })).toBe(origin + 1);

    const callbackUrl = router.register('sub-5', 'v');
    const noSecret = await subscribe({ callbackUrl, subscriptionId: 'sub-5', verifier: 'v', heartbeatIntervalMs: 1_000 }, { 'x-tenant-id': 'callback-co' });
    expect(noSecret.status).toBe(401);
    expect(noSecret.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');

    const unknown = await subscribe({ callbackUrl, subscriptionId: 'sub-5', verifier: 'v', heartbeatIntervalMs: 1_000 }, { 'router-authorization': ROUTER_SECRET, 'x-tenant-id': 'no-such-company' });
    expect(unknown.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const malformed = await subscribe({ callbackUrl, subscriptionId: 'sub-5', heartbeatIntervalMs: 1_000 });
    expect(malformed.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');

    expect(elsewhere.messages).toEqual([]);
    expect(router.messages.length).toBe(sentBefore);
    expect(await metric('wfs_live_subscriptions')).toBe(0);
  });
});
