/**
 * `npm run probe:live`: the figures of live updates (docs/live.md, "Measured"), against
 * the built subgraph (`node dist/index.js` with the Docker image's runtime flags) as
 * child processes and the upstream emulator in this process. Subscribers are raw
 * graphql-transport-ws sockets (what every graphql-ws client sends), light enough that
 * thousands fit in this process.
 *
 *   1. fanout:   N subscribers of one company's shifts on one replica; K changes made
 *                upstream; upstream polls per interval, delivery latency p50/p99
 *                (from the edit upstream to each subscriber's message).
 *   1b. protocols: N subscribers of one company split over graphql-ws, SSE, multipart and
 *                Apollo's callback protocol (only with `--only protocols`); polls per
 *                interval, latency per protocol, each change delivered once.
 *   2. replicas: two replicas on a real redis-server, N/2 subscribers each; upstream
 *                polls per interval for the fleet.
 *   3. spread:   S subscriptions over C companies (plus companies with none): peak RSS
 *                of the replica, polls of companies without a subscriber.
 *   4. flood:    another company's query p99 with and without a flood of subscribe
 *                messages on hostile sockets.
 *   5. filters:  another company's worst query latency while one company's F distinct
 *                windows that match nothing meet K changed shifts of an L-shift list
 *                each poll, and the same polls with no change.
 *
 *   npm run probe:live -- [--subscribers 1000] [--changes 5] [--interval 2]
 *                         [--spread-subscriptions 10000] [--spread-companies 1000]
 *                         [--only fanout,replicas,spread,flood,filters,protocols] [--profile DIR]
 *                         [--filters 1000] [--filter-shifts 19900] [--filter-changes 2000] [--filter-polls 3]
 *                         [--flood-addresses 1] (the hostile clients' source addresses, 127.0.0.2 up)
 *                         [--flood-queries 1000] (queries timed quiet, then as many flooded)
 *                         [--subgraph dist/index.js] (another build's entry, for a before/after)
 *                         [--replica-env NAME=VALUE ...] (settings for the replicas)
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import WebSocket from 'ws';
import { DEPLOYED_NODE_OPTIONS } from '../../bench/settings';
import { freePort, peakRssMiB, startServerProcess, type ServerChild } from '../../bench/processes';
import { demoTenants, generatedTenants, startEmulator, type Emulator, type EmulatorTenant } from '../emulator';

const QUERY = 'subscription { shiftChanges { kind nodeId shift { id end } } }';

/** One raw graphql-ws connection with `subscriptions` subscriptions; calls `onNext` per message. */
async function subscriber(url: string, tenantId: string, subscriptions: number, onNext: (at: number, payload: any) => void): Promise<WebSocket> {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws', { perMessageDeflate: false });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  socket.on('error', () => undefined);
  const acked = new Promise<void>((resolve) => {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'connection_ack') resolve();
      else if (message.type === 'next') onNext(performance.now(), message.payload);
      else if (message.type === 'ping') socket.send('{"type":"pong"}');
    });
  });
  socket.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'x-tenant-id': tenantId } } }));
  await acked;
  for (let i = 0; i < subscriptions; i++) socket.send(JSON.stringify({ id: String(i), type: 'subscribe', payload: { query: QUERY } }));
  return socket;
}

async function metricValue(url: string, name: string, labels = ''): Promise<number> {
  const response = await request(url.replace(/\/graphql$/, '/metrics'));
  const text = await response.body.text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith(' ') || rest.startsWith('{'))) continue;
    if (labels && !rest.includes(labels)) continue;
    total += Number(line.split(' ').pop());
  }
  return total;
}

async function until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function tenantsFile(tenants: readonly EmulatorTenant[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'wfs-live-probe-')), 'tenants.json');
  writeFileSync(path, JSON.stringify(tenants.map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, scope: t.grantedScopes.join(' ') }))), { mode: 0o600 });
  return path;
}

/** `--profile DIR`: the replicas write V8 CPU profiles there (where a scenario's time goes). */
let PROFILE_DIR: string | null = null;
/** `--subgraph PATH`: the entry point of another build to measure (default dist/index.js), e.g. main's for a before/after. */
let SUBGRAPH_ENTRY: string | null = null;
/** `--replica-env NAME=VALUE` (repeatable): settings for every replica, e.g. WFS_LIVE_ADDRESS_STRIKES=1000000 to see a flood without the per-address bound. */
let REPLICA_ENV: Record<string, string> = {};

function replica(emulator: Emulator, interval: number, env: Record<string, string> = {}): Promise<ServerChild> {
  return startServerProcess('subgraph', {
    authUrl: emulator.authUrl,
    tenantsFile: tenantsFile(emulator.tenants),
    profileDir: PROFILE_DIR,
    subgraphEntry: SUBGRAPH_ENTRY,
    // A connection a subscriber: 1 000 connections and subscriptions are past what the
    // shipped 256 MiB heap holds beside every other bound (docs/limits.md, "The memory
    // account"), so the replicas get twice the heap and the bounds to match, as an
    // operator would.
    nodeOptions: DEPLOYED_NODE_OPTIONS.replace('--max-old-space-size=256', '--max-old-space-size=512'),
    // The probe's subscribers all come from 127.0.0.1, standing for many clients: the
    // per-address connection shares are lifted (--replica-env sets them back).
    env: {
      WFS_POLL_INTERVAL_SECONDS: String(interval),
      WFS_LIVE_CONNECTIONS_PER_ADDRESS: '20000',
      WFS_MAX_CONNECTIONS_PER_ADDRESS: '1000000',
      WFS_MAX_CONNECTIONS: '3000',
      WFS_LIVE_MAX_CONNECTIONS: '2000',
      WFS_LIVE_MAX_SUBSCRIPTIONS: '2000',
      WFS_LIVE_SUBSCRIPTIONS_PER_COMPANY: '2000',
      ...REPLICA_ENV,
      ...env,
    },
  });
}

/** Edits one shift's end (:00 ↔ :30) and returns when. */
function edit(tenant: EmulatorTenant, index: number): number {
  const shift = tenant.shifts[index % tenant.shifts.length]!;
  shift.end = shift.end.replace(/T(\d\d):(\d\d)/, (_m, hour: string, minutes: string) => `T${hour}:${minutes === '30' ? '00' : '30'}`);
  return performance.now();
}

async function fanout(subscribers: number, changes: number, interval: number): Promise<Record<string, unknown>> {
  const emulator = await startEmulator({ tenants: demoTenants(), host: '127.0.0.1' });
  const server = await replica(emulator, interval);
  const tenant = emulator.tenants[0]!;
  const arrivals: number[][] = [];
  const sockets: WebSocket[] = [];
  try {
    for (let i = 0; i < subscribers; i++) {
      const mine: number[] = [];
      arrivals.push(mine);
      sockets.push(await subscriber(server.url, tenant.tenantId, 1, (at) => mine.push(at)));
    }
    await until(async () => (await metricValue(server.url, 'wfs_live_subscriptions')) === subscribers, 'subscribed');
    await until(async () => (await metricValue(server.url, 'wfs_live_polls_total', 'outcome="ok"')) >= 1, 'baseline');
    emulator.resetCounters();
    const started = performance.now();
    const latencies: number[] = [];
    for (let k = 0; k < changes; k++) {
      // A random moment within the interval, so latency covers where the poll falls.
      await sleep(Math.random() * interval * 1000);
      const editedAt = edit(tenant, k * 11 + 3);
      await until(() => arrivals.every((a) => a.length > k), `change ${k} delivered to all`, (interval * 2 + 10) * 1000);
      for (const a of arrivals) latencies.push(a[k]! - editedAt);
    }
    const seconds = (performance.now() - started) / 1000;
    const pages = Math.ceil(tenant.shifts.length / 100);
    const calls = emulator.counters.listRequests.shifts;
    return {
      subscribers,
      changes,
      intervalSeconds: interval,
      shiftsPerWalk: tenant.shifts.length,
      pagesPerWalk: pages,
      elapsedSeconds: Math.round(seconds * 10) / 10,
      upstreamShiftCalls: calls,
      pollsPerInterval: Math.round((calls / pages / (seconds / interval)) * 100) / 100,
      deliveries: latencies.length,
      latencyMs: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), max: Math.round(Math.max(...latencies)) },
      pollSecondsMean: Math.round(((await metricValue(server.url, 'wfs_live_poll_duration_seconds_sum')) / (await metricValue(server.url, 'wfs_live_poll_duration_seconds_count'))) * 1000) / 1000,
      peakRssMiB: peakRssMiB(server.child.process.pid),
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    await server.stop();
    await emulator.close();
  }
}

/**
 * One HTTP subscription (SSE or multipart) of `tenantId`'s shifts; calls `onNext` per
 * change as it arrives. Resolves once its answer's headers came; the stream is read on.
 */
async function httpSubscriber(url: string, tenantId: string, protocol: 'sse' | 'multipart', signal: AbortSignal, onNext: (at: number) => void): Promise<void> {
  const accept = protocol === 'sse' ? 'text/event-stream' : 'multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/json';
  const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept, 'x-tenant-id': tenantId }, body: JSON.stringify({ query: QUERY }), signal });
  // A change is one `event: next` (SSE) or one part with a `payload` (multipart); heartbeats carry neither.
  const marker = protocol === 'sse' ? 'event: next' : '{"payload"';
  void (async () => {
    let tail = '';
    for await (const chunk of response.body) {
      const text = tail + String(chunk);
      for (let at = text.indexOf(marker); at !== -1; at = text.indexOf(marker, at + marker.length)) onNext(performance.now());
      tail = text.slice(-marker.length);
    }
  })().catch(() => undefined);
}

/**
 * N subscribers of one company's shifts split over the four subgraph protocols
 * (graphql-ws, SSE, multipart, Apollo's callback protocol to an endpoint in this
 * process): upstream polls per interval (still one walk per company, list and interval),
 * and each protocol's delivery latency.
 */
async function protocols(subscribers: number, changes: number, interval: number): Promise<Record<string, unknown>> {
  const emulator = await startEmulator({ tenants: demoTenants(), host: '127.0.0.1' });
  const arrivals = new Map<string, number[]>();
  const callbackEndpoint = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += String(chunk)));
    req.on('end', () => {
      const message = JSON.parse(body) as { id: string; action: string };
      if (message.action === 'next') arrivals.get(message.id)?.push(performance.now());
      res.writeHead(204).end();
    });
  });
  const callbackPort = await freePort();
  await new Promise<void>((resolve) => callbackEndpoint.listen(callbackPort, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${callbackPort}`;
  const server = await replica(emulator, interval, { WFS_SUBSCRIPTION_CALLBACK_ALLOW: origin });
  const tenant = emulator.tenants[0]!;
  const kinds = ['ws', 'sse', 'multipart', 'callback'] as const;
  const of = new Map<string, (typeof kinds)[number]>();
  const sockets: WebSocket[] = [];
  const aborted = new AbortController();
  try {
    for (let i = 0; i < subscribers; i++) {
      const id = `s${i}`;
      const kind = kinds[i % kinds.length]!;
      const mine: number[] = [];
      arrivals.set(id, mine);
      of.set(id, kind);
      if (kind === 'ws') sockets.push(await subscriber(server.url, tenant.tenantId, 1, (at) => mine.push(at)));
      else if (kind !== 'callback') await httpSubscriber(server.url, tenant.tenantId, kind, aborted.signal, (at) => mine.push(at));
      else {
        const answer = await request(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-tenant-id': tenant.tenantId },
          body: JSON.stringify({ query: QUERY, extensions: { subscription: { callbackUrl: `${origin}/callback/${id}`, subscriptionId: id, verifier: 'probe', heartbeatIntervalMs: 10_000 } } }),
        });
        const text = await answer.body.text();
        if (text !== '{"data":null}') throw new Error(`callback subscription ${id} refused: ${text}`);
      }
    }
    await until(async () => (await metricValue(server.url, 'wfs_live_subscriptions')) === subscribers, 'subscribed');
    await until(async () => (await metricValue(server.url, 'wfs_live_polls_total', 'outcome="ok"')) >= 1, 'baseline');
    emulator.resetCounters();
    const started = performance.now();
    const latencies = new Map<string, number[]>(kinds.map((kind) => [kind, []]));
    for (let k = 0; k < changes; k++) {
      await sleep(Math.random() * interval * 1000);
      const editedAt = edit(tenant, k * 11 + 3);
      await until(() => [...arrivals.values()].every((a) => a.length > k), `change ${k} delivered to all`, (interval * 2 + 10) * 1000);
      for (const [id, a] of arrivals) latencies.get(of.get(id)!)!.push(a[k]! - editedAt);
    }
    const seconds = (performance.now() - started) / 1000;
    const pages = Math.ceil(tenant.shifts.length / 100);
    const calls = emulator.counters.listRequests.shifts;
    return {
      subscribers,
      byProtocol: Object.fromEntries(kinds.map((kind) => [kind, [...of.values()].filter((k) => k === kind).length])),
      changes,
      intervalSeconds: interval,
      pagesPerWalk: pages,
      elapsedSeconds: Math.round(seconds * 10) / 10,
      upstreamShiftCalls: calls,
      pollsPerInterval: Math.round((calls / pages / (seconds / interval)) * 100) / 100,
      deliveredEachOnce: [...arrivals.values()].every((a) => a.length === changes),
      latencyMs: Object.fromEntries([...latencies].map(([kind, values]) => [kind, { p50: Math.round(percentile(values, 50)), p99: Math.round(percentile(values, 99)) }])),
      peakRssMiB: peakRssMiB(server.child.process.pid),
    };
  } finally {
    aborted.abort();
    for (const socket of sockets) socket.terminate();
    await server.stop();
    callbackEndpoint.closeAllConnections();
    callbackEndpoint.close();
    await emulator.close();
  }
}

async function startRedis(): Promise<{ url: string; stop(): void }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await sleep(300);
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill() };
}

async function replicas(subscribers: number, interval: number, windowIntervals: number): Promise<Record<string, unknown>> {
  const emulator = await startEmulator({ tenants: demoTenants(), host: '127.0.0.1' });
  const redis = await startRedis();
  const env = { WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: 'live-probe-redis-key-0123456789abcdefghij' };
  const servers = [await replica(emulator, interval, env), await replica(emulator, interval, env)];
  const tenant = emulator.tenants[0]!;
  const sockets: WebSocket[] = [];
  let received = 0;
  try {
    for (let i = 0; i < subscribers; i++) sockets.push(await subscriber(servers[i % 2]!.url, tenant.tenantId, 1, () => (received += 1)));
    await until(async () => (await metricValue(servers[0]!.url, 'wfs_live_subscriptions')) + (await metricValue(servers[1]!.url, 'wfs_live_subscriptions')) === subscribers, 'subscribed');
    await until(async () => (await metricValue(servers[0]!.url, 'wfs_live_pollers_leading')) + (await metricValue(servers[1]!.url, 'wfs_live_pollers_leading')) === 1, 'one leader');
    emulator.resetCounters();
    const started = performance.now();
    edit(tenant, 5);
    await sleep(windowIntervals * interval * 1000);
    await until(() => received >= subscribers, 'the change on both replicas');
    const seconds = (performance.now() - started) / 1000;
    const pages = Math.ceil(tenant.shifts.length / 100);
    return {
      subscribers,
      perReplica: subscribers / 2,
      intervalSeconds: interval,
      elapsedSeconds: Math.round(seconds * 10) / 10,
      upstreamShiftCalls: emulator.counters.listRequests.shifts,
      fleetPollsPerInterval: Math.round((emulator.counters.listRequests.shifts / pages / (seconds / interval)) * 100) / 100,
      delivered: received,
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    await Promise.all(servers.map((server) => server.stop()));
    redis.stop();
    await emulator.close();
  }
}

async function spread(subscriptions: number, companies: number, interval: number): Promise<Record<string, unknown>> {
  const idle = 100;
  const tenants = generatedTenants(companies + idle, { locations: 5, shifts: 50 });
  const emulator = await startEmulator({ tenants, host: '127.0.0.1' });
  const server = await replica(emulator, interval);
  const sockets: WebSocket[] = [];
  try {
    // Two connections per company, the subscriptions split between them.
    const perConnection = Math.ceil(subscriptions / (companies * 2));
    for (let i = 0; i < companies * 2; i++) sockets.push(await subscriber(server.url, tenants[i % companies]!.tenantId, perConnection, () => undefined));
    const open = perConnection * companies * 2;
    await until(async () => (await metricValue(server.url, 'wfs_live_subscriptions')) === open, 'subscribed', 300_000);
    await until(async () => (await metricValue(server.url, 'wfs_live_polls_total', 'outcome="ok"')) >= companies * 2, 'two polls per company', 600_000);
    const idleCalls = tenants.slice(companies).reduce((sum, t) => sum + (emulator.counters.listRequestsByTenant[t.tenantId] ? Object.values(emulator.counters.listRequestsByTenant[t.tenantId]!).reduce((a: number, b) => a + Number(b), 0) : 0), 0);
    return {
      subscriptions: open,
      companies,
      connections: sockets.length,
      pollers: await metricValue(server.url, 'wfs_live_pollers'),
      stretchFactor: await metricValue(server.url, 'wfs_live_poll_stretch_factor'),
      peakRssMiB: peakRssMiB(server.child.process.pid),
      companiesWithoutSubscriber: idle,
      callsForThem: idleCalls,
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    await server.stop();
    await emulator.close();
  }
}

/** CPU time (user + system) a process has used so far, in ms (Linux /proc; clock ticks of 10 ms). */
function cpuMs(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The query p99, and the share of one core the replica used meanwhile. */
async function measured(url: string, tenantId: string, count: number, pid: number | undefined): Promise<{ p99: number; serverCpuShare: number }> {
  const [cpu, started] = [cpuMs(pid), performance.now()];
  const p99 = await queryP99(url, tenantId, count);
  return { p99, serverCpuShare: Math.round(((cpuMs(pid) - cpu) / (performance.now() - started)) * 100) / 100 };
}

async function queryP99(url: string, tenantId: string, count: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': tenantId }, body: JSON.stringify({ query: `{ shifts(first: 20) { nodes { id location { name } } } }` }) });
    await response.body.text();
    times.push(performance.now() - started);
  }
  return Math.round(percentile(times, 99) * 10) / 10;
}

async function flood(interval: number, addresses: number, queries: number): Promise<Record<string, unknown>> {
  const emulator = await startEmulator({ tenants: demoTenants(), host: '127.0.0.1' });
  const server = await replica(emulator, interval);
  const [hostile, other] = [emulator.tenants[0]!, emulator.tenants[1]!];
  try {
    await queryP99(server.url, other.tenantId, 50);
    const pid = server.child.process.pid;
    const quiet = await measured(server.url, other.tenantId, queries, pid);
    // Sixteen hostile clients in a process of their own (so the emulator in this one is
    // not starved), connecting again whenever the server closes or refuses them (FLOODER).
    const flooder = spawn(process.execPath, ['-e', FLOODER, server.url.replace(/^http/, 'ws'), hostile.tenantId, QUERY, String(addresses)], { cwd: join(__dirname, '..', '..'), stdio: ['ignore', 'pipe', 'inherit'] });
    const floodStarted = performance.now();
    let flooderOutput = '';
    flooder.stdout!.on('data', (chunk) => (flooderOutput += String(chunk)));
    await sleep(2_000);
    process.stderr.write('live probe: flood running, measuring\n');
    const flooded = await measured(server.url, other.tenantId, queries, pid);
    process.stderr.write('live probe: flood measured\n');
    flooder.kill('SIGTERM');
    await new Promise((resolve) => flooder.once('exit', resolve));
    const floodMs = performance.now() - floodStarted;
    const [sent, connections, refusedUpgrades, flooderCpuMs] = flooderOutput.trim().split(' ').map(Number);
    return { hostileAddresses: addresses, queriesEach: queries, ...(Object.keys(REPLICA_ENV).length > 0 && { replicaEnv: REPLICA_ENV }), quietP99Ms: quiet.p99, floodedP99Ms: flooded.p99, ratio: Math.round((flooded.p99 / quiet.p99) * 100) / 100, serverCpuShareQuiet: quiet.serverCpuShare, serverCpuShareFlooded: flooded.serverCpuShare, hostileMessagesSent: sent, hostileConnections: connections, hostileUpgradesRefused: refusedUpgrades, flooderCpuShare: Math.round((flooderCpuMs! / floodMs) * 100) / 100, peakRssMiB: peakRssMiB(server.child.process.pid) };
  } finally {
    await server.stop();
    await emulator.close();
  }
}

/**
 * The flooding clients' process: argv url, tenant, query; prints "messages connections
 * refusedUpgrades cpuMs" when stopped. Sixteen hostile clients, each connecting again as soon
 * as it is closed or refused (no back-off, whatever Retry-After says):
 *   - ten subscribe flooders: a valid connection_init, then 100 subscribe messages
 *     every 100 ms (10 000 a second in all);
 *   - two send malformed graphql-ws messages (not JSON, unknown types, a subscribe
 *     without an id), 100 every 100 ms;
 *   - two skip connection_init and send subscribes at once;
 *   - two send a forged connection_init (a company the subgraph does not serve) and
 *     then subscribes.
 */
const FLOODER = `
const WebSocket = require('ws');
const [url, tenant, query, addresses] = process.argv.slice(1);
let sent = 0, connections = 0, refused = 0, stop = false;
const started = process.cpuUsage();
process.on('SIGTERM', () => { stop = true; const cpu = process.cpuUsage(started); process.stdout.write(sent + ' ' + connections + ' ' + refused + ' ' + Math.round((cpu.user + cpu.system) / 1000) + '\\n', () => process.exit(0)); });
const MALFORMED = ['{not json', '{"type":"nope"}', '{"type":"subscribe","payload":{"query":"subscription { shiftChanges { kind } }"}}', '[]', '{"type":"next","id":"1"}'];
const subscribe = () => JSON.stringify({ id: 'f' + sent++, type: 'subscribe', payload: { query } });
let loops = 0;
async function one(kind) {
  // With more than one address, each hostile client connects from its own (127.0.0.2, ...).
  const localAddress = Number(addresses) > 1 ? '127.0.0.' + (2 + (loops++ % Number(addresses))) : undefined;
  while (!stop) {
    const socket = new WebSocket(url, 'graphql-transport-ws', localAddress ? { localAddress } : {});
    socket.on('error', () => undefined);
    socket.on('unexpected-response', (_req, res) => { refused += 1; res.resume(); socket.terminate(); });
    const opened = await new Promise((resolve) => { socket.once('open', () => resolve(true)); socket.once('close', () => resolve(false)); });
    if (!opened) continue;
    connections += 1;
    if (kind === 'subscribe') socket.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'x-tenant-id': tenant } } }));
    if (kind === 'forged') socket.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'x-tenant-id': 'forged-' + connections } } }));
    while (!stop && socket.readyState === socket.OPEN) {
      for (let j = 0; j < 100; j++) socket.send(kind === 'malformed' ? MALFORMED[sent++ % MALFORMED.length] : subscribe());
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    socket.terminate();
  }
}
for (let i = 0; i < 10; i++) one('subscribe');
for (let i = 0; i < 2; i++) { one('malformed'); one('noinit'); one('forged'); }
`;

/**
 * One company's live matching against another's queries: `filters` subscriptions of one company, each with its own
 * `startsFrom` in 2100 (none matches), on one connection; its list of `shifts` records
 * polled every `interval` s; another company queries one query after another. A control
 * phase of `polls` polls with nothing changed, then `polls` polls each after `changes`
 * shifts were edited: each phase's worst and p99 latency, and the replica's largest
 * event-loop delay (prom-client's `nodejs_eventloop_lag_max_seconds`, since the scrape
 * that started the phase).
 */
async function filters(count: number, shifts: number, changes: number, polls: number, interval: number): Promise<Record<string, unknown>> {
  const busy = generatedTenants(1, { locations: 10, shifts })[0]!;
  const quiet = generatedTenants(2, { locations: 2, shifts: 20 })[1]!;
  const emulator = await startEmulator({ tenants: [busy, quiet], host: '127.0.0.1' });
  // A walk of up to 200 pages a poll: the poll budget must not be what limits it here.
  const server = await replica(emulator, interval, { WFS_POLL_CALLS_PER_SECOND: '1000' });
  const socket = new WebSocket(server.url.replace(/^http/, 'ws'), 'graphql-transport-ws', { perMessageDeflate: false });
  try {
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    socket.on('error', () => undefined);
    let delivered = 0;
    const acked = new Promise<void>((resolve) =>
      socket.on('message', (data) => {
        const message = JSON.parse(String(data));
        if (message.type === 'connection_ack') resolve();
        else if (message.type === 'next') delivered += 1;
        else if (message.type === 'ping') socket.send('{"type":"pong"}');
      }),
    );
    socket.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'x-tenant-id': busy.tenantId } } }));
    await acked;
    const far = Date.parse('2100-01-01T00:00:00Z');
    const query = 'subscription($from: DateTime) { shiftChanges(filter: { startsFrom: $from }) { kind nodeId } }';
    for (let i = 0; i < count; i++) socket.send(JSON.stringify({ id: String(i), type: 'subscribe', payload: { query, variables: { from: new Date(far + i * 60_000).toISOString() } } }));
    await until(async () => (await metricValue(server.url, 'wfs_live_subscriptions')) === count, 'subscribed');
    await until(async () => (await metricValue(server.url, 'wfs_live_polls_total', 'outcome="ok"')) >= 2, 'the baseline and a poll');
    const calls = () => emulator.counters.listRequestsByTenant[busy.tenantId]?.shifts ?? 0;
    const pagesPerWalk = Math.ceil(shifts / 100);
    await queryP99(server.url, quiet.tenantId, 5);
    const phase = async (edit: boolean) => {
      const times: number[] = [];
      let querying = true;
      const queries = (async () => {
        while (querying) {
          const started = performance.now();
          const response = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': quiet.tenantId }, body: JSON.stringify({ query: '{ shifts(first: 20) { nodes { id location { name } } } }' }) });
          await response.body.text();
          times.push(performance.now() - started);
        }
      })();
      await metricValue(server.url, 'nodejs_eventloop_lag_max_seconds');
      for (let poll = 0; poll < polls; poll++) {
        if (edit) for (const shift of busy.shifts.slice(0, changes)) shift.end = new Date(Date.parse(shift.end) + 60_000).toISOString();
        const before = calls();
        await until(() => calls() >= before + 2 * pagesPerWalk, 'a whole walk after the edit');
      }
      const answered = times.length;
      await until(() => times.length >= answered + 5, 'five more queries');
      querying = false;
      await queries;
      const loopLag = await metricValue(server.url, 'nodejs_eventloop_lag_max_seconds');
      return { worstMs: Math.round(Math.max(...times)), p99Ms: Math.round(percentile(times, 99)), queries: times.length, loopLagMaxMs: Math.round(loopLag * 1000) };
    };
    const control = await phase(false);
    const changed = await phase(true);
    return { filters: count, shifts, changesPerPoll: changes, polls, control, changed, delivered, peakRssMiB: peakRssMiB(server.child.process.pid) };
  } finally {
    socket.terminate();
    await server.stop();
    await emulator.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      subscribers: { type: 'string', default: '1000' },
      changes: { type: 'string', default: '5' },
      interval: { type: 'string', default: '2' },
      'spread-subscriptions': { type: 'string', default: '10000' },
      'spread-companies': { type: 'string', default: '1000' },
      only: { type: 'string', default: 'fanout,replicas,spread,flood,filters' },
      filters: { type: 'string', default: '1000' },
      'filter-shifts': { type: 'string', default: '19900' },
      'filter-changes': { type: 'string', default: '2000' },
      'filter-polls': { type: 'string', default: '3' },
      profile: { type: 'string' },
      'flood-addresses': { type: 'string', default: '1' },
      'flood-queries': { type: 'string', default: '1000' },
      subgraph: { type: 'string' },
      'replica-env': { type: 'string', multiple: true },
    },
  });
  PROFILE_DIR = values.profile ?? null;
  SUBGRAPH_ENTRY = values.subgraph ?? null;
  REPLICA_ENV = Object.fromEntries((values['replica-env'] ?? []).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  const only = new Set(values.only!.split(','));
  const interval = Number(values.interval);
  const report: Record<string, unknown> = {};
  const step = async (name: string, run: () => Promise<Record<string, unknown>>) => {
    if (!only.has(name)) return;
    process.stderr.write(`live probe: ${name}…\n`);
    report[name] = await run();
    process.stdout.write(`${name}: ${JSON.stringify(report[name])}\n`);
  };
  await step('fanout', () => fanout(Number(values.subscribers), Number(values.changes), interval));
  await step('protocols', () => protocols(Number(values.subscribers), Number(values.changes), interval));
  await step('replicas', () => replicas(Number(values.subscribers), interval, 3));
  await step('spread', () => spread(Number(values['spread-subscriptions']), Number(values['spread-companies']), 15));
  await step('flood', () => flood(interval, Number(values['flood-addresses']), Number(values['flood-queries'])));
  await step('filters', () => filters(Number(values.filters), Number(values['filter-shifts']), Number(values['filter-changes']), Number(values['filter-polls']), 1));
}

main().catch((error: unknown) => {
  process.stderr.write(`live probe failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
