import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { collect, liveClient } from '../helpers/liveClient';
import { counterTotal, waitFor } from '../helpers/waitFor';
import type { Client } from 'graphql-ws';
import type { EmulatorShift } from '../../src/emulator';

const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId shift { id start end location { id name } } } }';

describe('live updates over graphql-ws', () => {
  let subgraph: TestSubgraph;
  let clients: Client[] = [];
  let tenantId: string;

  beforeAll(async () => {
    subgraph = await startTestSubgraph({}, { WFS_POLL_INTERVAL_SECONDS: '1', LOG_LEVEL: 'warn' });
    tenantId = subgraph.emulator.tenants[0]!.tenantId;
  });
  afterEach(async () => {
    await Promise.all(clients.map((client) => client.dispose()));
    clients = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'every subscription ended');
  });
  afterAll(() => subgraph.close());

  const client = (headers: Record<string, string> = { 'x-tenant-id': tenantId }) => {
    const made = liveClient(subgraph.server.url, headers);
    clients.push(made);
    return made;
  };

  it('delivers a shift changed upstream to every subscriber, from one poll of the list per interval', async () => {
    const SUBSCRIBERS = 40;
    const received = Array.from({ length: SUBSCRIBERS }, () => collect(client(), SHIFT_CHANGES));
    await waitFor(() => subgraph.server.live.subscriptions === SUBSCRIBERS, 'all subscribed');
    expect(subgraph.server.live.pollers).toBe(1);
    // The baseline poll: what exists now is not a change.
    await waitFor(async () => (await counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as never, { outcome: 'ok' })) >= 1, 'the baseline poll');
    const shifts = subgraph.emulator.tenants[0]!.shifts as EmulatorShift[];
    const changed = shifts[3]!;
    changed.end = changed.end.replace(/T(\d\d)/, (_m, hour: string) => `T${String((Number(hour) + 1) % 24).padStart(2, '0')}`);
    await waitFor(() => received.every((r) => r.results.length >= 1), 'every subscriber got the change');
    for (const r of received) {
      expect(r.results[0]!.data).toEqual({ shiftChanges: expect.objectContaining({ kind: 'UPDATED', shift: expect.objectContaining({ id: changed.id }) }) });
    }
  });
});
