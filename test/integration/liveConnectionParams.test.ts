import WebSocket from 'ws';
import { demoTenants } from '../../tools/emulator';
import { encodeNodeId } from '../../src/graphql/data/node';
import { wsUrl } from '../helpers/liveClient';
import { editShiftEnd } from '../helpers/relayLive';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * One connectionParams shape for the subgraph and Hive Gateway: the headers flat
 * (`{ 'x-tenant-id': … }`, Hive's) as well as nested (`{ headers: { … } }`); and demo
 * mode says which company a connection that names none was given, in `connection_ack`
 * and in each `next`'s `extensions` (`demoTenant`), as query answers do.
 */
const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId } }';

describe('connectionParams and the demo tenant', () => {
  let subgraph: TestSubgraph;
  const sockets: WebSocket[] = [];
  const [harbour, northfield] = demoTenants();

  beforeAll(async () => {
    subgraph = await startTestSubgraph({ tenants: demoTenants() }, { LOG_LEVEL: 'warn' }, { defaultTenant: harbour!.tenantId, live: { pollIntervalMs: 100 } });
  });

  afterAll(async () => {
    for (const socket of sockets) socket.terminate();
    await subgraph?.close();
  });

  /** A raw socket initialised with `params`; its messages so far. */
  const initialised = async (params?: Record<string, unknown>) => {
    const socket = new WebSocket(wsUrl(subgraph.server.url), 'graphql-transport-ws');
    sockets.push(socket);
    const messages: any[] = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    socket.send(JSON.stringify({ type: 'connection_init', ...(params && { payload: params }) }));
    await waitFor(() => messages.some((message) => message.type === 'connection_ack'), 'acknowledged');
    return { socket, messages };
  };
  const polls = async () => Number((await subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total')!.get()).values.reduce((sum, value) => sum + value.value, 0));

  it('reads the tenant from flat connectionParams as from nested ones, and says demoTenant in connection_ack and each next only when it defaulted', async () => {
    const defaulted = await initialised();
    const flat = await initialised({ 'x-tenant-id': northfield!.tenantId });
    const nested = await initialised({ headers: { 'x-tenant-id': northfield!.tenantId } });
    expect(defaulted.messages[0]).toEqual({ type: 'connection_ack', payload: { demoTenant: harbour!.tenantId } });
    expect(flat.messages[0]).toEqual({ type: 'connection_ack' });
    expect(nested.messages[0]).toEqual({ type: 'connection_ack' });

    const before = await polls();
    for (const connection of [defaulted, flat, nested]) connection.socket.send(JSON.stringify({ id: 'rota', type: 'subscribe', payload: { query: SHIFT_CHANGES } }));
    await waitFor(() => subgraph.server.live.subscriptions === 3, 'subscribed');
    await waitFor(async () => (await polls()) >= before + 2, 'the baseline polls');
    const harbourShift = subgraph.emulator.tenants.find((tenant) => tenant.tenantId === harbour!.tenantId)!.shifts[0]!;
    const northfieldShift = subgraph.emulator.tenants.find((tenant) => tenant.tenantId === northfield!.tenantId)!.shifts[0]!;
    editShiftEnd(harbourShift);
    editShiftEnd(northfieldShift);
    const nexts = (connection: { messages: any[] }) => connection.messages.filter((message) => message.type === 'next');
    await waitFor(() => [defaulted, flat, nested].every((connection) => nexts(connection).length > 0), 'a change on each connection');
    // Each connection hears its own company; only the defaulted one is told it defaulted.
    expect(nexts(defaulted)[0].payload).toEqual({ data: { shiftChanges: { kind: 'UPDATED', nodeId: expect.any(String) } }, extensions: { demoTenant: harbour!.tenantId } });
    for (const connection of [flat, nested]) expect(nexts(connection)[0].payload).toEqual({ data: { shiftChanges: { kind: 'UPDATED', nodeId: expect.any(String) } } });
    expect(nexts(flat)[0].payload.data.shiftChanges.nodeId).toBe(encodeNodeId('Shift', northfieldShift.id));
    expect(nexts(nested)[0].payload.data.shiftChanges.nodeId).toBe(encodeNodeId('Shift', northfieldShift.id));
    expect(nexts(defaulted)[0].payload.data.shiftChanges.nodeId).toBe(encodeNodeId('Shift', harbourShift.id));
  });
});
