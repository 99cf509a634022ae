import type { Counter } from 'prom-client';
import { REFUSAL_REASONS, closeCodeOf, refusal, refusalError, statusOf, type RefusalReason } from '../../src/graphql/admission/refusals';
import { createMetrics } from '../../src/observability/metrics';
import { metricsObserver } from '../../src/observability/metricsObserver';

const REQUESTS = 'wfs_graphql_requests_refused_total';
const CONNECTIONS = 'wfs_http_connections_refused_total';
const LIVE = 'wfs_live_subscriptions_refused_total';

/**
 * Every refusal the subgraph makes, written out once more by hand: its counter, the
 * `extensions.code` the client reads (null: the socket is closed or dropped with no
 * GraphQL answer), and its HTTP status, WebSocket close code, or `result` (the
 * operation's one result) or `dropped`. A reason added, dropped or changed in
 * graphql/admission/refusals.ts fails here until this table says so too.
 */
const EXPECTED: Record<RefusalReason, readonly [string, string | null, number | 'result' | 'dropped', 'status' | 'close' | null]> = {
  query_router_secret: [REQUESTS, 'UNAUTHENTICATED', 401, 'status'],
  in_flight: [REQUESTS, 'SERVICE_UNAVAILABLE', 503, 'status'],
  body_bytes: [REQUESTS, 'SERVICE_UNAVAILABLE', 503, 'status'],
  address_in_flight: [REQUESTS, 'SERVICE_UNAVAILABLE', 429, 'status'],
  address_body_bytes: [REQUESTS, 'SERVICE_UNAVAILABLE', 429, 'status'],
  body_timeout: [REQUESTS, 'BAD_REQUEST', 408, 'status'],
  query_document: [REQUESTS, 'GRAPHQL_VALIDATION_FAILED', 400, 'status'],
  query_cost: [REQUESTS, 'GRAPHQL_VALIDATION_FAILED', 400, 'status'],
  query_subscription: [REQUESTS, 'BAD_REQUEST', 400, 'status'],
  replica: [CONNECTIONS, null, 'dropped', null],
  address: [CONNECTIONS, null, 'dropped', null],
  headers_timeout: [CONNECTIONS, null, 408, 'status'],
  request_timeout: [CONNECTIONS, null, 408, 'status'],
  router_secret: [LIVE, 'UNAUTHENTICATED', 401, 'status'],
  replica_connections: [LIVE, null, 503, 'status'],
  address_connections: [LIVE, null, 429, 'status'],
  address_blocked: [LIVE, null, 429, 'status'],
  messages: [LIVE, null, 1008, 'close'],
  message_values: [LIVE, null, 1009, 'close'],
  refusals: [LIVE, null, 1008, 'close'],
  identity: [LIVE, 'UNAUTHENTICATED', 4403, 'close'],
  identity_lapsed: [LIVE, 'UNAUTHENTICATED', 'result', null],
  not_initialised: [LIVE, 'UNAUTHENTICATED', 'result', null],
  subscribe_identity: [LIVE, 'UNAUTHENTICATED', 'result', null],
  connection: [LIVE, 'BAD_REQUEST', 'result', null],
  company_rate: [LIVE, 'SERVICE_UNAVAILABLE', 'result', null],
  document: [LIVE, 'GRAPHQL_VALIDATION_FAILED', 'result', null],
  operation: [LIVE, 'BAD_REQUEST', 'result', null],
  variables: [LIVE, 'BAD_USER_INPUT', 'result', null],
  cost: [LIVE, 'GRAPHQL_VALIDATION_FAILED', 'result', null],
  connection_bytes: [LIVE, 'BAD_USER_INPUT', 'result', null],
  company_bytes: [LIVE, 'BAD_USER_INPUT', 'result', null],
  replica_bytes: [LIVE, 'BAD_USER_INPUT', 'result', null],
  company_subscriptions: [LIVE, 'SERVICE_UNAVAILABLE', 'result', null],
  replica_subscriptions: [LIVE, 'SERVICE_UNAVAILABLE', 'result', null],
  filters: [LIVE, 'SERVICE_UNAVAILABLE', 'result', null],
  callback_disabled: [LIVE, 'BAD_REQUEST', 'result', null],
  callback_extension: [LIVE, 'BAD_REQUEST', 'result', null],
  callback_origin: [LIVE, 'BAD_REQUEST', 'result', null],
  callback_router: [LIVE, 'SERVICE_UNAVAILABLE', 'result', null],
  callback_check: [LIVE, 'BAD_REQUEST', 'result', null],
};

/** Each reason's count on `metric`, its transports added up (`where`: only the samples with these labels). */
async function counted(registry: ReturnType<typeof createMetrics>['registry'], metric: string, where: Record<string, string> = {}): Promise<Record<string, number>> {
  const values = (await (registry.getSingleMetric(metric) as Counter<string>).get()).values;
  const counts: Record<string, number> = {};
  for (const value of values) {
    if (!Object.entries(where).every(([name, wanted]) => value.labels[name] === wanted)) continue;
    const reason = String(value.labels['reason']);
    counts[reason] = (counts[reason] ?? 0) + value.value;
  }
  return counts;
}

describe('refusals: one table of every refusal on every transport', () => {
  it('gives each reason its code, its HTTP status or close code, and its counter', () => {
    expect([...REFUSAL_REASONS].sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const reason of REFUSAL_REASONS) {
      const [metric, code, answer, kind] = EXPECTED[reason];
      const shape = refusal(reason);
      expect({ reason, metric: shape.metric, code: shape.code }).toEqual({ reason, metric, code });
      expect({ reason, status: statusOf(reason), close: closeCodeOf(reason) }).toEqual({
        reason,
        status: kind === 'status' ? answer : undefined,
        close: kind === 'close' ? answer : undefined,
      });
      if (kind === null) expect({ reason, answer: shape.answer }).toEqual({ reason, answer });
    }
  });

  it('counts each reason once, through the Observer event, on its own counter under its own label', async () => {
    const metrics = createMetrics();
    const observer = metricsObserver(metrics, (origin) => origin);
    const before: Record<string, Record<string, number>> = { [REQUESTS]: await counted(metrics.registry, REQUESTS), [CONNECTIONS]: await counted(metrics.registry, CONNECTIONS), [LIVE]: await counted(metrics.registry, LIVE) };
    // Every label exists from the start, at zero, and no other.
    for (const metric of [REQUESTS, CONNECTIONS, LIVE]) {
      expect(Object.keys(before[metric]).sort()).toEqual(REFUSAL_REASONS.filter((reason) => EXPECTED[reason][0] === metric).sort());
    }
    for (const reason of REFUSAL_REASONS) observer.refused!(reason);
    for (const metric of [REQUESTS, CONNECTIONS, LIVE]) {
      const after = await counted(metrics.registry, metric);
      for (const [reason, value] of Object.entries(after)) expect({ reason, value }).toEqual({ reason, value: 1 });
    }
    // A live refusal is counted under the protocol it came by; graphql-ws unless said.
    expect(Object.values(await counted(metrics.registry, LIVE, { transport: 'ws' }))).toEqual(Object.values(await counted(metrics.registry, LIVE)));
    observer.refused!('company_subscriptions', 'sse');
    expect((await counted(metrics.registry, LIVE, { transport: 'sse' }))['company_subscriptions']).toBe(1);
    // A reason or transport outside the tables is not counted under a label no dashboard knows.
    observer.refused!('rate');
    observer.refused!('filters', 'carrier-pigeon');
    expect((await counted(metrics.registry, LIVE))['rate']).toBeUndefined();
    expect((await counted(metrics.registry, LIVE))['filters']).toBe(1);
    metrics.close();
  });

  it('words the reasons that name no configured bound itself, and asks their checks for the others', () => {
    expect(refusalError('in_flight').extensions).toEqual({ code: 'SERVICE_UNAVAILABLE' });
    expect(refusalError('connection', 'at most 3 subscriptions').message).toBe('at most 3 subscriptions');
    expect(() => refusalError('connection')).toThrow('refusal connection has no message of its own');
  });
});
