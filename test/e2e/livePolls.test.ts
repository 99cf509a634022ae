import type { Client } from 'graphql-ws';
import { makeTenant, startEmulator, type Emulator } from '../../tools/emulator';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { collect, liveClient, type Received } from '../helpers/liveClient';
import { parseSamples, scrapeText, total } from '../helpers/metrics';
import { emulatorEnv } from '../helpers/postGraphQL';
import { waitFor } from '../helpers/waitFor';

/**
 * One company's subscriptions must not starve every company's polls (docs/live.md, "How
 * it polls": one poller per company and list; a poller per distinct filter once made
 * 1,000 `startsFrom` windows 1,000 pollers). The built
 * server as the image runs it (`node --max-semi-space-size=8 --max-old-space-size=256
 * dist/index.js`), against the emulator, whose per-tenant call counters say how often
 * each company's list was walked.
 */
/** The replica holds 1 000 subscriptions (the memory account): the flooding company's and the quiet one's. */
const SUBSCRIPTIONS = 999;
/** 250 shifts: a walk of the flooding company's list is 3 pages of 100. */
const PAGES_PER_WALK = 3;
const SHIFT_CHANGES = 'subscription($from: DateTime) { shiftChanges(filter: { startsFrom: $from }) { kind nodeId } }';

describe('live polls of the built server: one poller per company and list', () => {
  let emulator: Emulator;
  let server: BuiltServer;
  let url: string;
  const clients: Client[] = [];

  const metric = async (name: string): Promise<number> => total(parseSamples(await scrapeText(url)), name);
  const shiftCalls = (tenantId: string) => emulator.counters.listRequestsByTenant[tenantId]?.shifts ?? 0;

  beforeAll(async () => {
    emulator = await startEmulator({
      tenants: [makeTenant({ tenantId: 'flooder', locationCount: 5, shiftCount: 250 }), makeTenant({ tenantId: 'quiet', locationCount: 2, shiftCount: 20 })],
    });
    server = await startBuiltServer({
      ...emulatorEnv(emulator),
      // The smallest interval the settings allow: production's unit is the second.
      WFS_POLL_INTERVAL_SECONDS: '1',
    });
    url = server.url;
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.dispose()));
    await server?.stop();
    await emulator?.close();
  });

  it("makes one poller for 999 subscriptions with distinct startsFrom from one company, walks its list about once per interval, and leaves another company's interval unstretched", async () => {
    const flooder = liveClient(url, { 'x-tenant-id': 'flooder' });
    const quiet = liveClient(url, { 'x-tenant-id': 'quiet' });
    clients.push(flooder, quiet);
    const base = Date.parse('2020-01-01T00:00:00Z');
    const flood: Received[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) flood.push(collect(flooder, SHIFT_CHANGES, { from: new Date(base + i * 60_000).toISOString() }));
    const other = collect(quiet, SHIFT_CHANGES, { from: new Date(base).toISOString() });
    // A scrape every 50 ms: each is work for the server while it takes the subscribes.
    await waitFor(async () => (await metric('wfs_live_subscriptions')) === SUBSCRIPTIONS + 1, 'every subscription open', 30_000, 50);
    expect(flood.filter((received) => received.error !== undefined || received.results.length > 0)).toEqual([]);
    expect(other.error).toBeUndefined();
    // One poller per company and list: 999 filters of one list are one poller.
    expect(await metric('wfs_live_pollers')).toBe(2);

    emulator.resetCounters();
    // Five polls of the quiet company at its 1 s interval (jittered ±10 %); stretched
    // 13 times as before, this would take a minute and time out.
    await waitFor(() => shiftCalls('quiet') >= 5, "five polls of the quiet company's shifts", 12_000);
    const quietWalks = shiftCalls('quiet');
    const flooderCalls = shiftCalls('flooder');
    // About one walk of the flooding company's list per interval (its baseline long done):
    // in the time of `quietWalks` intervals, at most one walk more (the jitters differ).
    expect(flooderCalls).toBeGreaterThanOrEqual(PAGES_PER_WALK);
    expect(flooderCalls).toBeLessThanOrEqual(PAGES_PER_WALK * (quietWalks + 1));
    expect(await metric('wfs_live_poll_stretch_factor')).toBe(1);
    expect(await metric('wfs_live_pollers')).toBe(2);
    expect(server.alive()).toBe(true);
  });
});
