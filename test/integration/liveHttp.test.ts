import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import type { Client } from 'graphql-ws';
import type { Counter, Gauge } from 'prom-client';
import { request } from 'undici';
import type { EmulatorShift } from '../../tools/emulator';
import { collect, hourLater, liveClient } from '../helpers/liveClient';
import { subscribeHttp, type HttpProtocol, type HttpReceived } from '../helpers/liveHttpClient';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/** The poll interval of these tests (the server's time seam). */
const POLL_MS = 100;
/** The heartbeat of these tests' streams (the WebSocket's ping interval, `limits.socket.keepAliveMs`). */
const HEARTBEAT_MS = 150;

const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId shift { id end } } }';

/**
 * Live updates over HTTP (http/liveHttp.ts): GraphQL over SSE and Apollo's multipart
 * subscriptions on `POST /graphql`, against the real server and emulator, read as the
 * routers read them. Each subscriber, whatever its protocol, is one more subscriber of
 * the hub's one poller per company and list, admitted by the WebSocket's gate.
 */
describe('live updates over SSE and multipart', () => {
  let subgraph: TestSubgraph;
  let tenantId: string;
  let shifts: EmulatorShift[];
  let streams: HttpReceived[] = [];
  let clients: Client[] = [];

  const metric = <T>(name: string) => subgraph.server.metrics.registry.getSingleMetric(name) as T;
  const polls = () => counterTotal(metric<Counter<string>>('wfs_live_polls_total'), { outcome: 'ok' });
  const refusedTotal = (reason: string) => counterTotal(metric<Counter<string>>('wfs_live_subscriptions_refused_total'), { reason });
  const transport = async (name: string) => (await metric<Gauge<string>>('wfs_live_transport_subscriptions').get()).values.find((value) => value.labels['transport'] === name)?.value ?? 0;
  const subscribe = async (protocol: HttpProtocol, query = SHIFT_CHANGES, headers: Record<string, string> = { 'x-tenant-id': tenantId }, variables?: Record<string, unknown>) => {
    const stream = await subscribeHttp(subgraph.server.url, protocol, query, headers, variables);
    streams.push(stream);
    return stream;
  };

  beforeAll(async () => {
    // Two requests in flight at most: streams must not hold them (the third subscriber and a query still pass).
    subgraph = await startTestSubgraph({}, { LOG_LEVEL: 'warn' }, { live: { pollIntervalMs: POLL_MS }, limits: { socket: { keepAliveMs: HEARTBEAT_MS }, request: { inFlight: 2 } } });
    tenantId = subgraph.emulator.tenants[0]!.tenantId;
    shifts = subgraph.emulator.tenants[0]!.shifts;
  });
  afterEach(async () => {
    for (const stream of streams) stream.unsubscribe();
    await Promise.all(clients.map((client) => client.dispose()));
    streams = [];
    clients = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0 && subgraph.server.live.pollers === 0, 'every subscription and poller ended');
  });
  afterAll(() => subgraph.close());

  it('delivers each change exactly once to SSE, multipart and graphql-ws subscribers, from one poller', async () => {
    const before = await polls();
    const sse = [await subscribe('sse'), await subscribe('sse')];
    const multipart = [await subscribe('multipart'), await subscribe('multipart')];
    const ws = liveClient(subgraph.server.url, { 'x-tenant-id': tenantId });
    clients.push(ws);
    const overWs = collect(ws, SHIFT_CHANGES);
    await waitFor(() => subgraph.server.live.subscriptions === 5, 'all five subscribed');
    expect(subgraph.server.live.pollers).toBe(1);
    expect(sse[0]!.contentType).toMatch(/^text\/event-stream/);
    expect(multipart[0]!.contentType).toMatch(/^multipart\/mixed;boundary="graphql";subscriptionSpec="1.0"/);
    expect({ sse: await transport('sse'), multipart: await transport('multipart'), ws: await transport('ws') }).toEqual({ sse: 2, multipart: 2, ws: 1 });
    await waitFor(async () => (await polls()) > before, 'the baseline poll');

    const first = shifts[2]!;
    first.end = hourLater(first.end);
    const all = [...sse, ...multipart, overWs];
    await waitFor(() => all.every((r) => r.results.length >= 1), 'every subscriber got the first change');
    const second = shifts[5]!;
    second.end = hourLater(second.end);
    await waitFor(() => all.every((r) => r.results.length >= 2), 'every subscriber got the second change');
    // Two more polls: nothing more arrives (each change once).
    const after = await polls();
    await waitFor(async () => (await polls()) >= after + 2, 'two more polls');
    for (const r of all) {
      expect(r.results).toEqual([
        { data: { shiftChanges: { kind: 'UPDATED', nodeId: expect.any(String), shift: { id: first.id, end: first.end } } } },
        { data: { shiftChanges: { kind: 'UPDATED', nodeId: expect.any(String), shift: { id: second.id, end: second.end } } } },
      ]);
    }
    // Four streams open and two requests in flight allowed: a query is still served.
    const answer = await subgraph.query('{ locations(first: 1) { edges { node { id } } } }', {}, { 'x-tenant-id': tenantId });
    expect(answer.errors).toBeUndefined();
  });

  it("serves Apollo Client 4's HttpLink, which subscribes over multipart: a change lands in its cache", async () => {
    const cache = new InMemoryCache();
    const client = new ApolloClient({ link: new HttpLink({ uri: subgraph.server.url, headers: { 'x-tenant-id': tenantId } }), cache });
    const received: Array<{ shiftChanges: { kind: string; shift: { id: string; end: string } | null } }> = [];
    const before = await polls();
    const subscription = client.subscribe<(typeof received)[number]>({ query: gql(SHIFT_CHANGES) }).subscribe({ next: (result) => void (result.data && received.push(result.data)) });
    try {
      await waitFor(() => subgraph.server.live.subscriptions === 1, 'subscribed');
      expect(await transport('multipart')).toBe(1);
      await waitFor(async () => (await polls()) > before, 'the baseline poll');
      const shift = shifts[7]!;
      shift.end = hourLater(shift.end);
      await waitFor(() => received.length >= 1, 'the change in Apollo Client');
      expect(received).toEqual([{ shiftChanges: expect.objectContaining({ kind: 'UPDATED', shift: expect.objectContaining({ id: shift.id, end: shift.end }) }) }]);
      expect(cache.extract()[`Shift:${shift.id}`]).toMatchObject({ end: shift.end });
    } finally {
      subscription.unsubscribe();
      client.stop();
    }
  });

  it('writes heartbeats while nothing changes, and ends the subscription when the client goes', async () => {
    const sse = await subscribe('sse');
    const multipart = await subscribe('multipart');
    await waitFor(() => subgraph.server.live.subscriptions === 2, 'both subscribed');
    await waitFor(() => sse.heartbeats >= 3 && multipart.heartbeats >= 2, 'heartbeats');
    expect(sse.results).toEqual([]);
    expect(multipart.results).toEqual([]);
    sse.unsubscribe();
    await waitFor(() => subgraph.server.live.subscriptions === 1, "the SSE client's subscription ended with it");
    multipart.unsubscribe();
    await waitFor(() => subgraph.server.live.subscriptions === 0, "the multipart client's subscription ended with it");
    expect(await transport('sse')).toBe(0);
  });

  it.each<HttpProtocol>(['sse', 'multipart'])('answers a refusal over %s as the one result with its code, then the end, and counts it', async (protocol) => {
    const identity = await refusedTotal('subscribe_identity');
    const unknown = await subscribe(protocol, SHIFT_CHANGES, { 'x-tenant-id': 'no-such-company' });
    await unknown.ended;
    expect(unknown.status).toBe(200);
    expect(unknown.completed).toBe(true);
    expect(unknown.results).toEqual([{ errors: [expect.objectContaining({ extensions: expect.objectContaining({ code: 'FORBIDDEN' }), path: ['shiftChanges'] })] }]);
    expect(await refusedTotal('subscribe_identity')).toBe(identity + 1);

    const document = await refusedTotal('document');
    const invalid = await subscribe(protocol, 'subscription { shiftChanges { noSuchField } }');
    await invalid.ended;
    expect(invalid.results).toEqual([{ errors: [expect.objectContaining({ extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }) })] }]);
    expect(await refusedTotal('document')).toBe(document + 1);

    const variables = await subscribe(protocol, 'subscription($filter: ShiftFilter) { shiftChanges(filter: $filter) { kind } }', { 'x-tenant-id': tenantId }, { filter: { noSuchField: 1 } });
    await variables.ended;
    expect(variables.results[0]?.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('refuses a callback subscription while WFS_SUBSCRIPTION_CALLBACK_ALLOW is unset, with its code', async () => {
    const disabled = await refusedTotal('callback_disabled');
    const { statusCode, body } = await request(subgraph.server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tenant-id': tenantId },
      body: JSON.stringify({ query: SHIFT_CHANGES, extensions: { subscription: { callbackUrl: 'http://127.0.0.1:9/callback/1', subscriptionId: '1', verifier: 'v', heartbeatIntervalMs: 5_000 } } }),
    });
    expect(statusCode).toBe(200);
    expect(await body.json()).toEqual({ data: null, errors: [expect.objectContaining({ extensions: { code: 'BAD_REQUEST' } })] });
    expect(await refusedTotal('callback_disabled')).toBe(disabled + 1);
    // Counted under the protocol it came by, as every live refusal is.
    expect(await counterTotal(metric<Counter<string>>('wfs_live_subscriptions_refused_total'), { reason: 'callback_disabled', transport: 'callback' })).toBe(disabled + 1);
    expect(subgraph.server.live.subscriptions).toBe(0);
  });

  it("counts every protocol's subscriptions against one company's bound: graphql-ws and SSE fill it, multipart is refused", async () => {
    const bounded = await startTestSubgraph({}, { LOG_LEVEL: 'warn' }, { live: { pollIntervalMs: POLL_MS }, limits: { live: { perCompany: 2 } } });
    const company = { 'x-tenant-id': bounded.emulator.tenants[0]!.tenantId };
    const ws = liveClient(bounded.server.url, company);
    const opened: HttpReceived[] = [];
    try {
      collect(ws, SHIFT_CHANGES);
      opened.push(await subscribeHttp(bounded.server.url, 'sse', SHIFT_CHANGES, company));
      await waitFor(() => bounded.server.live.subscriptions === 2, 'two subscriptions, over graphql-ws and SSE');
      const refused = await subscribeHttp(bounded.server.url, 'multipart', SHIFT_CHANGES, company);
      opened.push(refused);
      await refused.ended;
      expect(refused.results).toEqual([{ errors: [expect.objectContaining({ extensions: expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }), path: ['shiftChanges'] })] }]);
      const refusals = bounded.server.metrics.registry.getSingleMetric('wfs_live_subscriptions_refused_total') as Counter<string>;
      expect(await counterTotal(refusals, { reason: 'company_subscriptions' })).toBe(1);
      // Under the protocol that was refused: multipart, not graphql-ws or SSE.
      expect(await counterTotal(refusals, { reason: 'company_subscriptions', transport: 'multipart' })).toBe(1);
    } finally {
      for (const stream of opened) stream.unsubscribe();
      await ws.dispose();
      await bounded.close();
    }
  });

  it('leaves a query asking for SSE or multipart to Apollo Server', async () => {
    const { statusCode, body } = await request(subgraph.server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec=1.0, application/json', 'x-tenant-id': tenantId },
      body: JSON.stringify({ query: '{ locations(first: 1) { edges { node { id } } } }' }),
    });
    const answer = (await body.json()) as { data?: { locations: { edges: unknown[] } } };
    expect(statusCode).toBe(200);
    expect(answer.data?.locations.edges).toHaveLength(1);
    expect(subgraph.server.live.subscriptions).toBe(0);
  });
});
