import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from 'graphql-ws';
import type { Counter } from 'prom-client';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { collect, liveClient, type Received } from '../helpers/liveClient';
import { startRedisServer } from '../helpers/redisServer';
import { livePolls, livePollersLeading, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * Two replicas on one real redis-server and one emulator, each with a subscriber to a
 * company's locations and that list's first page kept (docs/caching.md): a change the
 * leader's poll sees is POSTed to the invalidation endpoint once for the fleet, and
 * both replicas drop their kept page and the answer kept whole from it (the follower
 * when the Redis change message reaches its poller), so the next read on either,
 * within the window, goes upstream.
 */
const LOCATIONS = '{ locations(first: 10) { nodes { id name } } }';

describe('kept answers across replicas', () => {
  let redis: Awaited<ReturnType<typeof startRedisServer>>;
  let emulator: Emulator;
  let replicas: TestSubgraph[] = [];
  const clients: Client[] = [];
  const posts: unknown[] = [];
  const endpoint = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += String(chunk)));
    req.on('end', () => {
      posts.push(JSON.parse(text));
      res.writeHead(200).end('{"count":1}');
    });
  });

  beforeAll(async () => {
    redis = await startRedisServer();
    emulator = await startEmulator();
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    const env = {
      WFS_REDIS_URL: redis.url,
      WFS_REDIS_KEY: 'replica-redis-record-key-0123456789abcdef',
      WFS_CURSOR_SECRET: 'shared-replica-cursor-secret-0123456789',
      LOG_LEVEL: 'error',
      WFS_FRESHNESS_SECONDS: '300',
      WFS_CACHE_INVALIDATION_URLS: `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/invalidation`,
      WFS_CACHE_INVALIDATION_KEY: 'fleet-invalidation-key-0123456789',
    };
    const options = { live: { pollIntervalMs: 100, minLeaseMs: 1_000 } };
    replicas = [await startTestSubgraph({}, env, options, emulator), await startTestSubgraph({}, env, options, emulator)];
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.dispose()));
    await Promise.all(replicas.map((replica) => replica.close()));
    await emulator.close();
    await redis.stop();
    endpoint.closeAllConnections();
    await new Promise((resolve) => endpoint.close(resolve));
  });

  const lookups = async (replica: TestSubgraph, cache: 'kept_pages' | 'whole_answers', result: 'hit' | 'miss') =>
    (await (replica.server.metrics.registry.getSingleMetric('wfs_cache_requests_total') as Counter).get()).values.find((sample) => sample.labels.cache === cache && sample.labels.result === result)?.value ?? 0;
  const keptPages = (replica: TestSubgraph, result: 'hit' | 'miss') => lookups(replica, 'kept_pages', result);
  const leading = (replica: TestSubgraph) => livePollersLeading(replica.server);

  it('sends one invalidation for the fleet and drops the kept page on both replicas', async () => {
    const tenant = emulator.tenants[0]!;
    const headers = { 'x-tenant-id': tenant.tenantId };
    const received: Received[] = [];
    for (const replica of replicas) {
      const connection = liveClient(replica.server.url, headers);
      clients.push(connection);
      received.push(collect(connection, 'subscription { locationChanges { kind location { id name } } }'));
    }
    await waitFor(() => replicas.every((replica) => replica.server.live.subscriptions === 1), 'subscribed on both');
    await waitFor(async () => (await livePolls(replicas[0]!.server)) >= 1 && (await livePolls(replicas[1]!.server)) >= 1, 'both baselines');
    await waitFor(async () => (await leading(replicas[0]!)) + (await leading(replicas[1]!)) === 1, 'one leader for the fleet');

    // Both replicas keep the page, and the answer whole (once asked twice): a third read on
    // each costs no call, nor execution. Counted by each replica's kept-page misses and
    // whole-answer hits: the emulator's own count of list calls also has the leader's polls, every 100 ms here.
    for (const replica of replicas) await replica.query(LOCATIONS, {}, headers);
    for (const replica of replicas) await replica.query(LOCATIONS, {}, headers);
    const misses = await Promise.all(replicas.map((replica) => keptPages(replica, 'miss')));
    const hits = await Promise.all(replicas.map((replica) => lookups(replica, 'whole_answers', 'hit')));
    for (const replica of replicas) expect((await replica.query(LOCATIONS, {}, headers)).headers?.['cache-control']).toMatch(/^private, max-age=/);
    expect(await Promise.all(replicas.map((replica) => keptPages(replica, 'miss')))).toEqual(misses);
    expect(await Promise.all(replicas.map((replica) => lookups(replica, 'whole_answers', 'hit')))).toEqual(hits.map((count) => count + 1));

    const target = tenant.locations[1]!;
    const old = target.name;
    target.name = `${old} (moved)`;
    try {
      await waitFor(() => received.every((r) => r.results.length >= 1), 'both subscribers got the change');
      await waitFor(() => posts.length >= 1, 'the invalidation POST');
      // Both replicas now read the list again, within the window, and see the change.
      for (const replica of replicas) {
        const before = await keptPages(replica, 'miss');
        const after = await replica.query(LOCATIONS, {}, headers);
        expect(after.data.locations.nodes[1].name).toBe(target.name);
        // Its kept page was dropped, and the answer kept whole with it (the follower's when
        // the Redis change message reached its poller): this read missed and went upstream.
        expect(await keptPages(replica, 'miss')).toBe(before + 1);
      }
      // One POST for the one change batch: only the lease holder sends.
      const until = (await livePolls(replicas[0]!.server)) + (await livePolls(replicas[1]!.server)) + 2;
      await waitFor(async () => (await livePolls(replicas[0]!.server)) + (await livePolls(replicas[1]!.server)) >= until, 'two more polls');
      expect(posts).toHaveLength(1);
    } finally {
      target.name = old;
    }
  });
});
