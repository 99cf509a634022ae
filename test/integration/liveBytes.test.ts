import type { Counter } from 'prom-client';
import WebSocket from 'ws';
import { demoTenants } from '../../tools/emulator';
import { initParams } from '../../src/graphql/admission/identity';
import { wsUrl } from '../helpers/liveClient';
import { counterTotal, waitFor } from '../helpers/waitFor';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * The bytes of variables open subscriptions keep are bounded per connection, company
 * and replica (docs/live.md, "Limits"): a subscribe past one is refused with
 * BAD_USER_INPUT and counted by reason; a subscription that ends gives its bytes back.
 * Only the coerced values of the variables an operation declares count (and are kept).
 */
const FILTERED = 'subscription Filtered($filter: ShiftFilter) { shiftChanges(filter: $filter) { kind nodeId } }';
/** Variables whose declared part is 2,023 bytes of JSON (`{"filter":{"locationId":"l…l"}}`), with 50 KB the operation does not declare (a message is at most 64 KiB). */
const VARIABLES = { filter: { locationId: 'l'.repeat(1_997) }, unused: 'u'.repeat(50_000) };
const DECLARED_BYTES = JSON.stringify({ filter: VARIABLES.filter }).length;

describe('bytes of variables kept by open subscriptions', () => {
  let subgraph: TestSubgraph;
  const sockets: WebSocket[] = [];
  const [harbour, northfield] = demoTenants();

  beforeAll(async () => {
    // Two subscriptions per connection; four per company; five on the replica.
    subgraph = await startTestSubgraph(
      { tenants: demoTenants() },
      { LOG_LEVEL: 'warn' },
      { live: { pollIntervalMs: 100 }, limits: { gate: { variableBytesPerConnection: 2 * DECLARED_BYTES, variableBytesPerCompany: 4 * DECLARED_BYTES, variableBytesPerReplica: 5 * DECLARED_BYTES + 100 } } },
    );
  });

  afterAll(async () => {
    for (const socket of sockets) socket.terminate();
    await subgraph?.close();
  });

  const refusals = (reason: string) => counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_subscriptions_refused_total') as Counter<string>, { reason });
  const open = () => subgraph.server.live.subscriptions;

  /** A raw socket of `tenantId`'s, initialised; `subscribe(id)` answers with the errors of a refusal, or [] once open. */
  const connection = async (tenantId: string) => {
    const socket = new WebSocket(wsUrl(subgraph.server.url), 'graphql-transport-ws');
    sockets.push(socket);
    const messages: any[] = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'x-tenant-id': tenantId } } }));
    await waitFor(() => messages.some((message) => message.type === 'connection_ack'), 'acknowledged');
    const subscribe = async (id: string, variables: unknown = VARIABLES): Promise<unknown[]> => {
      const before = open();
      socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query: FILTERED, variables } }));
      let errors: unknown[] | undefined;
      await waitFor(() => {
        errors = messages.find((message) => message.id === id && message.type === 'next')?.payload.errors;
        return errors !== undefined || open() === before + 1;
      }, `subscription ${id} open or refused`);
      return errors ?? [];
    };
    const complete = async (id: string) => {
      const before = open();
      socket.send(JSON.stringify({ id, type: 'complete' }));
      await waitFor(() => open() === before - 1, `subscription ${id} ended`);
    };
    return { subscribe, complete };
  };
  const refused = (message: RegExp) => [expect.objectContaining({ message: expect.stringMatching(message), extensions: { code: 'BAD_USER_INPUT' } })];

  it('refuses a subscribe past the bytes of one connection, one company and the replica, and gives them back when a subscription ends', async () => {
    const a = await connection(harbour!.tenantId);
    expect(await a.subscribe('a1')).toEqual([]);
    expect(await a.subscribe('a2')).toEqual([]);
    const before = { connection: await refusals('connection_bytes'), company: await refusals('company_bytes'), replica: await refusals('replica_bytes') };
    expect(await a.subscribe('a3')).toEqual(refused(/connection's open subscriptions may keep at most 4 KiB/));
    expect(await refusals('connection_bytes')).toBe(before.connection + 1);

    const b = await connection(harbour!.tenantId);
    expect(await b.subscribe('b1')).toEqual([]);
    expect(await b.subscribe('b2')).toEqual([]);
    const c = await connection(harbour!.tenantId);
    expect(await c.subscribe('c1')).toEqual(refused(/your company's open subscriptions on this replica may keep at most 8 KiB/));
    expect(await refusals('company_bytes')).toBe(before.company + 1);

    const d = await connection(northfield!.tenantId);
    expect(await d.subscribe('d1')).toEqual([]);
    const e = await connection(northfield!.tenantId);
    expect(await e.subscribe('e1')).toEqual(refused(/this replica's open subscriptions may keep at most 10 KiB/));
    expect(await refusals('replica_bytes')).toBe(before.replica + 1);

    // An ended subscription gives its bytes back to its connection, company and the replica.
    await a.complete('a1');
    expect(await e.subscribe('e1-again')).toEqual([]);
    expect(await a.subscribe('a3-again', { filter: { locationId: 'short' } })).toEqual([]);
  });

  it('refuses variables that do not coerce to the types their operation declares, as BAD_USER_INPUT', async () => {
    const f = await connection(northfield!.tenantId);
    expect(await f.subscribe('bad', { filter: { locationId: 'x', startsFrom: 'yesterday' } })).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/^Variable "\$filter" got invalid value "yesterday" at "filter.startsFrom"/), extensions: { code: 'BAD_USER_INPUT' } }),
    ]);
  });
});

describe('initParams: what graphql-ws keeps of a connection_init payload', () => {
  const names = ['x-tenant-id', 'authorization', 'router-authorization'];

  it('keeps only the headers identity reads, nested winning over flat, names in any case, each at most 8 KiB', () => {
    expect(
      initParams(
        { headers: { 'X-Tenant-Id': 'nested', cookie: 'c' }, 'x-tenant-id': 'flat', Authorization: 'Bearer t', padding: 'p'.repeat(250_000), 'router-authorization': 'r'.repeat(8_193) },
        names,
      ),
    ).toEqual({ headers: { 'x-tenant-id': 'nested', authorization: 'Bearer t' } });
    expect(initParams({ authorization: 'a'.repeat(8_192), 'x-tenant-id': 42 }, names)).toEqual({ headers: { authorization: 'a'.repeat(8_192) } });
    expect(initParams('p'.repeat(1_000), names)).toBeUndefined();
    expect(initParams(['x-tenant-id'], names)).toBeUndefined();
  });
});
