import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Coordinator } from '../../src/live/coordinator';
import { createRedisCoordinator, liveSealingKey, MAX_MESSAGE_BYTES, REPLAY_WINDOW_MS, type RedisCoordinatorOptions, type RedisDropReason } from '../../src/live/redisCoordinator';
import { fingerprint, REMOVED_FINGERPRINT, type RecordChange } from '../../src/live/snapshot';
import { connectRedis, type RedisConnections } from '../../src/upstream/redis/connection';
import { seal, sealingKey } from '../../src/upstream/redis/seal';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import { waitFor } from '../helpers/waitFor';

/**
 * The live coordinator on a real redis-server, with what anyone who reaches Redis can
 * do: PUBLISH on a channel they list with PUBSUB CHANNELS, write a lease. Only what a
 * replica sealed with the fleet's key, for that channel, once and lately, in the shape
 * a replica writes, is delivered; everything else is dropped, counted by reason, and
 * never throws. The lease takes milliseconds (`minLeaseMs`), so an expiry is a few
 * hundred ms and waited for as a condition.
 */
const SECRET = 'coordinator-test-secret-0123456789abcdefgh';
const KEY = 'tenant-a\nshifts\n{}';
const OTHER_KEY = 'tenant-b\nshifts\n{}';
const LEASE_MS = 200;

let redis: RedisTestServer;
let admin: Redis;
let spy: Redis;
const opened: Array<{ coordinator: Coordinator; connections: RedisConnections }> = [];
let fleet = 0;

interface Replica {
  readonly coordinator: Coordinator & { readonly replicaId: string };
  readonly drops: RedisDropReason[];
  /** The Redis key of each drop (the channel, or the lease's key), in order. */
  readonly dropKeys: string[];
  /** Each call of the listener of KEY, in order. */
  readonly heard: Array<readonly RecordChange[]>;
}

/** A replica's coordinator on connections of its own, listening to KEY. */
async function replica(prefix: string, options: Partial<RedisCoordinatorOptions> = {}, listen = true): Promise<Replica> {
  const connections = connectRedis(redis.url);
  const drops: RedisDropReason[] = [];
  const dropKeys: string[] = [];
  const heard: Array<readonly RecordChange[]> = [];
  const onDropped = (reason: RedisDropReason, name: string) => (drops.push(reason), dropKeys.push(name));
  const coordinator = createRedisCoordinator(connections, { secret: SECRET, prefix, minLeaseMs: LEASE_MS, onDropped, ...options });
  opened.push({ coordinator, connections });
  await waitFor(() => connections.commands.status === 'ready' && connections.subscriber().status === 'ready', 'the replica connected');
  if (listen) {
    const before = await subscribers(prefix);
    coordinator.listen(KEY, (changes) => heard.push(changes));
    await waitFor(async () => (await subscribers(prefix)) > before, 'the replica subscribed');
  }
  return { coordinator, drops, dropKeys, heard };
}

/** Connections subscribed to the channel of KEY. */
async function subscribers(prefix: string): Promise<number> {
  return Number(((await admin.pubsub('NUMSUB', channelOf(prefix))) as [string, number | string])[1]);
}

/** The channel of KEY, as an attacker finds it: the one PUBSUB CHANNELS lists under the prefix. */
const channels = new Map<string, string>();
function channelOf(prefix: string): string {
  return channels.get(prefix)!;
}

/** A fresh fleet: its prefix and the channel of KEY, learnt from Redis once a replica listens. */
async function newFleet(): Promise<{ prefix: string; a: Replica; b: Replica }> {
  fleet += 1;
  const prefix = `test${fleet}:live:`;
  const connections = connectRedis(redis.url);
  const probe = createRedisCoordinator(connections, { secret: SECRET, prefix });
  opened.push({ coordinator: probe, connections });
  probe.listen(KEY, () => undefined);
  await waitFor(async () => (await admin.pubsub('CHANNELS', `${prefix}changes:*`)).length === 1, 'the channel listed');
  const [channel] = (await admin.pubsub('CHANNELS', `${prefix}changes:*`)) as string[];
  channels.set(prefix, channel!);
  return { prefix, a: await replica(prefix), b: await replica(prefix) };
}

const record = (id: string, note = 'a shift') => ({ id, start: '2026-11-23T09:00:00+01:00', end: '2026-11-23T17:00:00+01:00', note });
const added = (id: string, note?: string): RecordChange => {
  const r = record(id, note);
  return { kind: 'ADDED', id, record: r, fingerprint: fingerprint(r) };
};
const ids = (replica: Replica) => replica.heard.flat().map((change) => change.id);

/** A message as a replica of the fleet seals it, with any fields. */
function sealed(prefix: string, body: unknown, secretKey = liveSealingKey(SECRET)): string {
  return seal(secretKey, channelOf(prefix), typeof body === 'string' ? body : JSON.stringify(body));
}
let seq = 0;
const envelope = (changes: unknown, extra: Record<string, unknown> = {}) => ({ from: randomUUID(), seq: (seq += 1), at: Date.now(), changes, ...extra });

/** Publishes a genuine change from `from` and waits until `to` heard it: everything published before has been handled. */
async function marker(from: Replica, to: Replica, id: string): Promise<void> {
  from.coordinator.publish(KEY, [added(id)]);
  await waitFor(() => ids(to).includes(id), `the marker ${id}`);
}

beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url);
  spy = new Redis(redis.url);
});
afterAll(async () => {
  for (const { coordinator, connections } of opened) {
    await coordinator.close();
    await connections.close();
  }
  admin.disconnect();
  spy.disconnect();
  await redis.stop();
});

describe('live messages through Redis', () => {
  it("reach the other replicas sealed, unreadable in Redis, and never the sender's own listener", async () => {
    const { prefix, a, b } = await newFleet();
    const seen: string[] = [];
    await spy.subscribe(channelOf(prefix));
    spy.on('message', (_channel: string, text: string) => seen.push(text));
    a.coordinator.publish(KEY, [added('shift-1')]);
    await waitFor(() => ids(b).length === 1, 'b heard a');
    await marker(b, a, 'from-b');
    expect(ids(b)).toEqual(['shift-1']);
    expect(ids(a)).toEqual(['from-b']);
    expect(b.heard[0]).toEqual([added('shift-1')]);
    await waitFor(() => seen.length === 2, 'the spy heard both');
    for (const text of seen) {
      expect(text.startsWith('v1.')).toBe(true);
      expect(text).not.toContain('shift-1');
      expect(text).not.toContain('from-b');
    }
    expect([...a.drops, ...b.drops]).toEqual([]);
    await spy.unsubscribe();
    spy.removeAllListeners('message');
  });

  it('drops a made-up ADDED shift PUBLISHed on a live channel, and other unsealed text: counted, not delivered', async () => {
    const { prefix, a, b } = await newFleet();
    const forged = { from: 'attacker', seq: 1, at: Date.now(), changes: [added('forged-shift')] };
    const texts = [JSON.stringify(forged), '{"changes":[null]}', '', 'v1.', 'v1.not base64!', 'v1.AAAA', 'V1.' + sealed(prefix, forged).slice(3)];
    for (const text of texts) await admin.publish(channelOf(prefix), text);
    await marker(a, b, 'genuine');
    expect(ids(b)).toEqual(['genuine']);
    expect(b.drops).toEqual(texts.map(() => 'unsealed'));
  });

  it('drops what does not authenticate: sealed with another key, another channel, or altered', async () => {
    const { prefix, a, b } = await newFleet();
    // Another fleet's key (another WFS_REDIS_KEY), and the token records' key of this fleet.
    await admin.publish(channelOf(prefix), sealed(prefix, envelope([added('other-key')]), liveSealingKey('another-fleet-secret-0123456789abcdefghij')));
    await admin.publish(channelOf(prefix), sealed(prefix, envelope([added('record-key')]), sealingKey(SECRET, 'wfs-subgraph token record v1')));
    // A genuine message of another key's channel (another company's list), moved to this one.
    const moved = new Promise<string>((resolve) => spy.once('pmessage', (_pattern: string, _channel: string, text: string) => resolve(text)));
    await spy.psubscribe(`${prefix}changes:*`);
    await waitFor(async () => Number(await admin.pubsub('NUMPAT')) > 0, 'the spy subscribed');
    a.coordinator.publish(OTHER_KEY, [added('another-company')]);
    const text = await moved;
    await spy.punsubscribe();
    await admin.publish(channelOf(prefix), text);
    // A genuine message of this channel with one character changed.
    const genuine = sealed(prefix, envelope([added('altered')]));
    const middle = Math.floor(genuine.length / 2);
    await admin.publish(channelOf(prefix), genuine.slice(0, middle) + (genuine[middle] === 'A' ? 'B' : 'A') + genuine.slice(middle + 1));
    await marker(a, b, 'genuine');
    expect(ids(b)).toEqual(['genuine']);
    expect(b.drops).toEqual(['forged', 'forged', 'forged', 'forged']);
  });

  it('drops a sealed message that is not of the shape a replica writes, field by field, and goes on', async () => {
    const { prefix, a, b } = await newFleet();
    const good = added('good');
    const removed = { kind: 'REMOVED', id: 'gone', fingerprint: REMOVED_FINGERPRINT };
    const bodies: unknown[] = [
      'not json',
      'null',
      '[]',
      '"text"',
      { changes: [null] },
      envelope([null]),
      envelope([good, null]),
      envelope([]),
      envelope('changes'),
      envelope({ 0: good }),
      envelope([[]]),
      envelope([{ ...good, kind: 'DELETED' }]),
      envelope([{ ...good, kind: null }]),
      envelope([{ ...good, id: 5 }]),
      envelope([{ ...good, id: '' }]),
      envelope([{ kind: 'ADDED', id: 'good', fingerprint: good.fingerprint }]),
      envelope([{ ...good, record: null }]),
      envelope([{ ...good, record: [good.record] }]),
      envelope([{ ...good, record: record('someone-else') }]),
      envelope([{ ...good, fingerprint: good.fingerprint + 1 }]),
      envelope([{ ...good, fingerprint: 1.5 }]),
      envelope([{ ...good, fingerprint: '1' }]),
      envelope([{ ...good, kind: 'UPDATED', fingerprint: REMOVED_FINGERPRINT }]),
      envelope([{ ...removed, record: record('gone') }]),
      envelope([{ ...removed, fingerprint: 7 }]),
      envelope([good], { from: undefined }),
      envelope([good], { from: 7 }),
      envelope([good], { from: 'x'.repeat(65) }),
      envelope([good], { seq: 0 }),
      envelope([good], { seq: '9' }),
      envelope([good], { seq: 1.5 }),
      envelope([good], { at: 'now' }),
      envelope([good], { at: null }),
    ];
    for (const body of bodies) await admin.publish(channelOf(prefix), sealed(prefix, body));
    await marker(a, b, 'genuine');
    expect(ids(b)).toEqual(['genuine']);
    expect(b.drops).toEqual(bodies.map(() => 'malformed'));
    // The same message well formed is delivered: the drops above were for their one flaw.
    await admin.publish(channelOf(prefix), sealed(prefix, envelope([good, removed])));
    await waitFor(() => ids(b).length === 3, 'the well-formed one');
    expect(ids(b)).toEqual(['genuine', 'good', 'gone']);
  });

  it(`drops a message over ${MAX_MESSAGE_BYTES} bytes before decoding it; a replica splits what it publishes under that bound`, async () => {
    const { prefix, a, b } = await newFleet();
    const oversized = sealed(prefix, envelope([added('huge', 'x'.repeat(MAX_MESSAGE_BYTES))]));
    expect(oversized.length).toBeGreaterThan(MAX_MESSAGE_BYTES);
    await admin.publish(channelOf(prefix), oversized);
    await admin.publish(channelOf(prefix), 'x'.repeat(4 * MAX_MESSAGE_BYTES));
    await marker(a, b, 'genuine');
    expect(ids(b)).toEqual(['genuine']);
    expect(b.drops).toEqual(['oversized', 'oversized']);

    // 1 000 changes of about 700 bytes (sealed, 4/3 of that): several messages, each under the bound, all heard in order.
    const sizes: number[] = [];
    await spy.subscribe(channelOf(prefix));
    spy.on('messageBuffer', (_channel: Buffer, bytes: Buffer) => sizes.push(bytes.length));
    const many = Array.from({ length: 1_000 }, (_, i) => added(`bulk-${i}`, 'n'.repeat(500)));
    // One change too large for a message of its own stays with its replica, counted there.
    a.coordinator.publish(KEY, [...many.slice(0, 10), added('too-large', 'x'.repeat(MAX_MESSAGE_BYTES)), ...many.slice(10)]);
    await waitFor(() => ids(b).length === 1 + many.length, 'every change of the batch');
    expect(ids(b).slice(1)).toEqual(many.map((change) => change.id));
    await waitFor(() => sizes.length === b.heard.length - 1, 'the spy heard as many messages');
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    expect(b.drops).toEqual(['oversized', 'oversized']);
    expect(a.drops).toEqual(['oversized', 'oversized', 'unpublishable']);
    await spy.unsubscribe();
    spy.removeAllListeners('messageBuffer');
  });

  it('drops a sealed message heard before, or whose clock is outside the replay window', async () => {
    const { prefix, a, b } = await newFleet();
    const captured: string[] = [];
    await spy.subscribe(channelOf(prefix));
    spy.on('message', (_channel: string, text: string) => captured.push(text));
    a.coordinator.publish(KEY, [added('once')]);
    await waitFor(() => captured.length === 1 && ids(b).length === 1, 'the genuine message');
    await spy.unsubscribe();
    spy.removeAllListeners('message');
    await admin.publish(channelOf(prefix), captured[0]!);
    await admin.publish(channelOf(prefix), captured[0]!);
    await admin.publish(channelOf(prefix), sealed(prefix, envelope([added('old')], { at: Date.now() - REPLAY_WINDOW_MS - 1_000 })));
    await admin.publish(channelOf(prefix), sealed(prefix, envelope([added('future')], { at: Date.now() + REPLAY_WINDOW_MS + 1_000 })));
    // A sender's sequence numbers may arrive out of order, each once.
    const from = randomUUID();
    for (const n of [5, 3, 4, 3, 5]) await admin.publish(channelOf(prefix), sealed(prefix, envelope([added(`seq-${n}`)], { from, seq: n })));
    await marker(a, b, 'genuine');
    expect(ids(b)).toEqual(['once', 'seq-5', 'seq-3', 'seq-4', 'genuine']);
    expect(b.drops).toEqual(['replayed', 'replayed', 'replayed', 'replayed', 'replayed', 'replayed']);
  });

  it('never throws into Redis: a listener that throws costs that message only', async () => {
    const { prefix, a } = await newFleet();
    const c = await replica(prefix, {}, false);
    const heard: string[] = [];
    c.coordinator.listen(KEY, (changes) => {
      if (changes[0]!.id === 'boom') throw new TypeError('a bug in a listener');
      heard.push(changes[0]!.id);
    });
    await waitFor(async () => (await subscribers(prefix)) === 4, 'c subscribed (with a, b and the probe)');
    a.coordinator.publish(KEY, [added('boom')]);
    a.coordinator.publish(KEY, [added('after')]);
    await waitFor(() => heard.includes('after'), 'the next message');
    expect(c.drops).toEqual(['malformed']);
  });
});

describe('poll leases in Redis', () => {
  const leaseKeys = async (prefix: string) => (await admin.keys(`${prefix}lease:*`)) as string[];

  it('has one holder at a time; a lease its holder stops renewing is taken over once it ends', async () => {
    const { prefix, a, b } = await newFleet();
    expect(await a.coordinator.lead(KEY, 10)).toBe(true);
    expect(await b.coordinator.lead(KEY, 10)).toBe(false);
    expect(await a.coordinator.lead(KEY, 10)).toBe(true);
    const [lease] = await leaseKeys(prefix);
    const ttl = await admin.pttl(lease!);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(LEASE_MS);
    // a stops renewing (it crashed): b takes the lease when Redis lets it expire, in LEASE_MS.
    await waitFor(() => b.coordinator.lead(KEY, 10), 'b leads');
    expect(await a.coordinator.lead(KEY, 10)).toBe(false);
    // b forgets the key: its lease is given back at once.
    b.coordinator.forget(KEY);
    await waitFor(async () => (await leaseKeys(prefix)).length === 0, 'the lease given back');
    expect(await a.coordinator.lead(KEY, 10)).toBe(true);
    expect([...a.drops, ...b.drops]).toEqual([]);
  });

  it('takes over at once a lease value no replica wrote, whatever it is, and counts it', async () => {
    const { prefix, a, b } = await newFleet();
    // A genuine lease of a's for another key, to be moved to this key's lease.
    expect(await a.coordinator.lead(OTHER_KEY, 10)).toBe(true);
    const [otherLease] = await leaseKeys(prefix);
    const movedValue = (await admin.get(otherLease!))!;
    expect(await a.coordinator.lead(KEY, 10)).toBe(true);
    const leaseName = (await leaseKeys(prefix)).find((name) => name !== otherLease)!;
    const foreign: Array<[string, () => Promise<unknown>]> = [
      ['a word, without expiry', () => admin.set(leaseName, 'not-a-replica')],
      ['an empty string', () => admin.set(leaseName, '')],
      ['something sealed-looking', () => admin.set(leaseName, 'v1.' + 'A'.repeat(100))],
      ['a hash', () => admin.del(leaseName).then(() => admin.hset(leaseName, 'holder', 'me'))],
      ['a 1 MiB string', () => admin.set(leaseName, 'x'.repeat(1 << 20))],
      ["a replica's lease of another key", () => admin.set(leaseName, movedValue)],
    ];
    for (const [, write] of foreign) {
      await write();
      expect(await b.coordinator.lead(KEY, 10)).toBe(true);
      const value = await admin.get(leaseName);
      expect(value?.startsWith('v1.')).toBe(true);
      expect(await admin.pttl(leaseName)).toBeGreaterThan(0);
      expect(await a.coordinator.lead(KEY, 10)).toBe(false);
    }
    expect(b.drops).toEqual(foreign.map(() => 'lease'));
    // Each named by the lease's key, for the log line that says where to look.
    expect(b.dropKeys).toEqual(foreign.map(() => leaseName));
    expect(a.drops).toEqual([]);
  });

  it("takes over a replica's own lease kept past its end (PERSIST, or put back later)", async () => {
    const { prefix, b } = await newFleet();
    // A replica whose lease ended ten minutes ago, kept by someone with PERSIST.
    const past = await replica(prefix, { now: () => Date.now() - 600_000 }, false);
    expect(await past.coordinator.lead(KEY, 10)).toBe(true);
    const [lease] = await leaseKeys(prefix);
    await admin.persist(lease!);
    expect(await b.coordinator.lead(KEY, 10)).toBe(true);
    expect(await admin.pttl(lease!)).toBeGreaterThan(0);
    // Not counted as foreign: it is a replica's, only old.
    expect(b.drops).toEqual([]);
  });
});

describe('Redis going and coming back', () => {
  it('is told once when Redis stops answering and once when it answers again, a lease command timed out on a connection that stayed up included', async () => {
    const { prefix } = await newFleet();
    const events: string[] = [];
    const { coordinator } = await replica(prefix, { onDown: () => events.push('down'), onUp: () => events.push('up') }, false);
    expect(await coordinator.lead(KEY, 10)).toBe(true);
    expect(events).toEqual([]);
    // Writes (a lease's script) wait until UNPAUSE: the command times out (1 s), the
    // connection stays up, so no `ready` event says Redis is back: the next answer must.
    await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    try {
      expect(await coordinator.lead(KEY, 10)).toBe(true);
      expect(await coordinator.lead(KEY, 10)).toBe(true);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
    }
    expect(events).toEqual(['down']);
    expect(await coordinator.lead(KEY, 10)).toBe(true);
    expect(await coordinator.lead(KEY, 10)).toBe(true);
    expect(events).toEqual(['down', 'up']);
  });
});

describe('what a replica drops', () => {
  it('names the channel of each message it drops', async () => {
    const { prefix, a, b } = await newFleet();
    await admin.publish(channelOf(prefix), 'plain text');
    await admin.publish(channelOf(prefix), sealed(prefix, envelope([added('shift-x')]), sealingKey('another-deployments-secret-0123456789abc', 'wfs-subgraph live message v1')));
    await marker(b, a, 'marker-keys');
    expect(a.drops).toEqual(['unsealed', 'forged']);
    expect(a.dropKeys).toEqual([channelOf(prefix), channelOf(prefix)]);
  });
});
