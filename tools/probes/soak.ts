/**
 * `npm run soak`: minutes of mixed load over several tenants against the built subgraph
 * (`node dist/index.js`) and the upstream emulator, each in its own process, with faults
 * injected throughout: 5xx bursts, a shard outage (opens its breaker), hangs, 429s
 * (short and long Retry-After), 503 with Retry-After, token revocations and shard moves.
 *
 * It ends with a table: queries, failures that should not have failed (must be 0),
 * token requests against the lifetime formula, peak RSS, open sockets and handles at
 * start and end (flat), and a sweep of the captured logs and error messages for
 * secrets and tokens (must be 0). Exit code 1 when a must-be-0 line is not.
 *
 *   npm run soak                 # about 3 minutes
 *   npm run soak -- --short      # 30 s smoke test
 *   SOAK_SECONDS=600 npm run soak
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import type { EmulatorCounters, FaultSpec } from '../emulator/types';

const ROOT = resolve(__dirname, '..', '..');
const SHORT = process.argv.includes('--short');
const DURATION_S = Number(process.env.SOAK_SECONDS ?? (SHORT ? 30 : 180));
const TOKEN_LIFETIME_S = SHORT ? 20 : 60;
const TENANTS = 6;
const CONCURRENCY = 8;
const FAULT_EVERY_MS = SHORT ? 2_500 : 4_000;
/** How long after a move a tenant's calls may still land on its old shard. */
const ATTRIBUTION_MS = 25_000;
const SETTLE_MS = 10_000;

interface SoakTenant {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  shard: number;
  locationIds: string[];
}

interface Ready {
  type: 'ready';
  authUrl: string;
  shardUrls: string[];
  tenants: SoakTenant[];
}

/** A fault in force: which tenants and shard it may make fail, with which codes, until when. */
interface Injected {
  kind: string;
  tenantId?: string;
  shard?: number;
  codes: string[];
  from: number;
  until: number;
}

// ---------------------------------------------------------------------------------------
// Processes

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

function startEmulatorProcess(): Promise<{ child: ChildProcess; ready: Ready; call: (message: Record<string, unknown>) => Promise<unknown> }> {
  const child = fork(join(ROOT, 'node_modules/jiti/lib/jiti-cli.mjs'), [join(ROOT, 'tools/probes/soakEmulator.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { PATH: process.env.PATH ?? '', SOAK_TENANTS: String(TENANTS), SOAK_TOKEN_LIFETIME: String(TOKEN_LIFETIME_S) },
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  const call = (message: Record<string, unknown>) =>
    new Promise<unknown>((resolveCall, rejectCall) => {
      const id = nextId++;
      pending.set(id, { resolve: resolveCall, reject: rejectCall });
      child.send({ ...message, id });
    });
  return new Promise((resolveStart, rejectStart) => {
    child.once('exit', (code) => rejectStart(new Error(`the emulator process exited (${code})`)));
    child.on('message', (message: { type?: string; id?: number; result?: unknown; error?: string }) => {
      if (message.type === 'ready') return resolveStart({ child, ready: message as unknown as Ready, call });
      const waiter = message.id === undefined ? undefined : pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id!);
      if (message.error) waiter.reject(new Error(message.error));
      else waiter.resolve(message.result);
    });
  });
}

async function startSubgraphProcess(ready: Ready, logs: string[]): Promise<{ child: ChildProcess; url: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'wfs-soak-'));
  const tenantsFile = join(dir, 'tenants.json');
  writeFileSync(
    tenantsFile,
    JSON.stringify(ready.tenants.map(({ tenantId, clientId, clientSecret, scope }) => ({ tenantId, clientId, clientSecret, scope }))),
    { mode: 0o600 },
  );
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'dist/index.js')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      WFS_AUTH_URL: ready.authUrl,
      WFS_TENANTS_FILE: tenantsFile,
      WFS_CURSOR_SECRET: 'soak-cursor-secret-0123456789abcdef0123456789',
      LOG_LEVEL: 'debug',
    },
  });
  const capture = (chunk: Buffer) => logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  child.stdout!.on('data', capture);
  child.stderr!.on('data', capture);
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the subgraph exited (${child.exitCode}):\n${logs.slice(-5).join('\n')}`);
    try {
      const response = await request(`${url}/health`);
      await response.body.dump();
      if (response.statusCode === 200) return { child, url: `${url}/graphql` };
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error('the subgraph did not answer /health within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Open file descriptors of a process, and how many are sockets (Linux /proc). */
function handles(pid: number): { handles: number; sockets: number } {
  const fds = readdirSync(`/proc/${pid}/fd`);
  let sockets = 0;
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets += 1;
    } catch {
      // closed while we looked
    }
  }
  return { handles: fds.length, sockets };
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0);
}

// ---------------------------------------------------------------------------------------
// Load

interface Outcome {
  tenantId: string;
  /** When the query was sent. */
  at: number;
  /** When its answer came (a query may wait out a window, so a fault injected meanwhile can touch it). */
  end: number;
  ok: boolean;
  codes: string[];
  why?: string;
}

interface SoakQuery {
  query: string;
  variables?: Record<string, unknown>;
  check: (data: any) => boolean;
}

const QUERIES: Array<(tenant: SoakTenant) => SoakQuery> = [
  (t: SoakTenant) => ({ query: '{ locations(first: 10) { nodes { id name } } }', check: (d: any) => ids(d.locations.nodes, t, 10) }),
  (t: SoakTenant) => ({ query: '{ shifts(first: 20) { nodes { id start location { id name } } } }', check: (d: any) => ids(d.shifts.nodes.map((s: any) => s.location), t, 20) }),
  (t: SoakTenant) => {
    const id = pick(t.locationIds);
    return { query: 'query($id: ID!) { location(id: $id) { id name } }', variables: { id }, check: (d: any) => d.location?.id === id };
  },
  (t: SoakTenant) => ({ query: '{ locations(last: 3) { nodes { id } } }', check: (d: any) => ids(d.locations.nodes, t, 3) }),
  (t: SoakTenant) => {
    const wanted = [pick(t.locationIds), pick(t.locationIds)];
    return {
      query: 'query($r: [_Any!]!) { _entities(representations: $r) { ... on Location { id name } } }',
      variables: { r: wanted.map((id) => ({ __typename: 'Location', id })) },
      check: (d: any) => d._entities.every((e: any, i: number) => e?.id === wanted[i]),
    };
  },
];

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}

/** Every record belongs to the tenant (no cross-tenant data), and the count is what was asked. */
function ids(nodes: Array<{ id: string } | null>, tenant: SoakTenant, count: number): boolean {
  const own = new Set(tenant.locationIds);
  return nodes.length === Math.min(count, nodes.length) && nodes.length > 0 && nodes.every((node) => node !== null && own.has(node.id));
}

async function runQuery(url: string, tenant: SoakTenant, errorTexts: string[]): Promise<Outcome> {
  const { query, variables, check } = pick(QUERIES)(tenant);
  const at = Date.now();
  try {
    const response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tenant-id': tenant.tenantId },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.body.text();
    const body = JSON.parse(text) as { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> };
    if (body.errors?.length) {
      errorTexts.push(text);
      return { tenantId: tenant.tenantId, at, end: Date.now(), ok: false, codes: body.errors.map((e) => e.extensions?.code ?? 'NONE'), why: body.errors[0]!.message };
    }
    if (!check(body.data)) return { tenantId: tenant.tenantId, at, end: Date.now(), ok: false, codes: ['WRONG_DATA'], why: text.slice(0, 300) };
    return { tenantId: tenant.tenantId, at, end: Date.now(), ok: true, codes: [] };
  } catch (error) {
    return { tenantId: tenant.tenantId, at, end: Date.now(), ok: false, codes: ['NO_RESPONSE'], why: String(error) };
  }
}

// ---------------------------------------------------------------------------------------
// Faults

function faultPlan(ready: Ready, call: (message: Record<string, unknown>) => Promise<unknown>, shardOf: Map<string, number>) {
  const injected: Injected[] = [];
  const counts = { revocations: new Map<string, number>(), moves: new Map<string, number>() };
  const bump = (map: Map<string, number>, id: string) => map.set(id, (map.get(id) ?? 0) + 1);
  const fault = (spec: FaultSpec) => call({ cmd: 'fault', spec });
  const kinds = ['5xx-burst', 'hang', '429-short', 'revoke', 'shard-outage', '429-long', 'move', '503-retry-after'] as const;
  let next = 0;
  const step = async () => {
    const kind = kinds[next++ % kinds.length]!;
    const tenant = pick(ready.tenants);
    const shard = shardOf.get(tenant.tenantId)!;
    const now = Date.now();
    const endpoint = pick(['locations', 'shifts'] as const);
    switch (kind) {
      case '5xx-burst':
        await fault({ endpoint, tenantId: tenant.tenantId, status: pick([500, 502, 504]), times: 4 });
        injected.push({ kind, tenantId: tenant.tenantId, codes: ['UPSTREAM_UNAVAILABLE'], from: now, until: now + 10_000 });
        break;
      case 'hang':
        await fault({ endpoint, tenantId: tenant.tenantId, hang: true, times: 1 });
        // Headers time out after 8 s; the retry then fits in the request's 15 s, or the query fails.
        injected.push({ kind, tenantId: tenant.tenantId, codes: ['UPSTREAM_UNAVAILABLE'], from: now, until: now + 20_000 });
        break;
      case '429-short':
        await fault({ endpoint, tenantId: tenant.tenantId, status: 429, headers: { 'retry-after': '1' }, times: 2 });
        injected.push({ kind, tenantId: tenant.tenantId, codes: ['UPSTREAM_RATE_LIMITED'], from: now, until: now + 10_000 });
        break;
      case '429-long':
        await fault({ endpoint, tenantId: tenant.tenantId, status: 429, headers: { 'retry-after': '5' }, times: 1 });
        injected.push({ kind, tenantId: tenant.tenantId, codes: ['UPSTREAM_RATE_LIMITED'], from: now, until: now + 8_000 });
        break;
      case '503-retry-after':
        await fault({ endpoint, tenantId: tenant.tenantId, status: 503, headers: { 'retry-after': '4' }, times: 1 });
        injected.push({ kind, shard, codes: ['UPSTREAM_UNAVAILABLE'], from: now, until: now + 8_000 });
        break;
      case 'shard-outage':
        // Every tenant of one shard fails for 3 s: the shard's breaker opens, then heals by itself.
        for (const t of ready.tenants.filter((x) => shardOf.get(x.tenantId) === shard)) {
          for (const list of ['locations', 'shifts'] as const) await fault({ endpoint: list, tenantId: t.tenantId, status: 503, times: 1000 });
        }
        setTimeout(() => void call({ cmd: 'clearFaults' }), 3_000);
        // 3 s of outage, the breaker's 5 s pause, a probe.
        injected.push({ kind, shard, codes: ['UPSTREAM_UNAVAILABLE'], from: now, until: now + 15_000 });
        break;
      case 'revoke':
        // Must not fail anything: one renewal, served.
        await call({ cmd: 'revoke', tenantId: tenant.tenantId });
        bump(counts.revocations, tenant.tenantId);
        break;
      case 'move': {
        // Must not fail anything: 401 on the old shard, one renewal, served from the new one.
        const to = (shard + 1) % ready.shardUrls.length;
        await call({ cmd: 'move', tenantId: tenant.tenantId, shard: to });
        shardOf.set(tenant.tenantId, to);
        bump(counts.moves, tenant.tenantId);
        break;
      }
    }
  };
  return { injected, counts, step };
}

/** A failure counts as expected only when a fault that touched this tenant or its shard was in force, with a matching code. */
function expected(outcome: Outcome, injected: Injected[], shardAt: (tenantId: string, at: number, end: number) => Set<number>): boolean {
  const shards = shardAt(outcome.tenantId, outcome.at, outcome.end);
  return outcome.codes.every((code) =>
    injected.some(
      (f) =>
        f.codes.includes(code) &&
        outcome.end >= f.from &&
        outcome.at <= f.until &&
        (f.tenantId === outcome.tenantId || (f.shard !== undefined && shards.has(f.shard))),
    ),
  );
}

// ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const logs: string[] = [];
  const errorTexts: string[] = [];
  const { child: emulatorChild, ready, call } = await startEmulatorProcess();
  let subgraph: ChildProcess | undefined;
  try {
    const started = await startSubgraphProcess(ready, logs);
    subgraph = started.child;
    const pid = subgraph.pid!;
    const shardOf = new Map(ready.tenants.map((t) => [t.tenantId, t.shard]));
    // Where each tenant was when: a failure is judged against the shard(s) the tenant was on
    // during its query (and, just after a move, the old one, whose calls may still be in flight).
    const moves: Array<{ tenantId: string; at: number; from: number; to: number }> = [];
    const shardAt = (tenantId: string, at: number, end: number = at) => {
      let shard = ready.tenants.find((t) => t.tenantId === tenantId)!.shard;
      const set = new Set<number>();
      for (const move of moves) {
        if (move.tenantId !== tenantId) continue;
        if (move.at <= at) shard = move.to;
        if (move.at <= end && move.at > at - ATTRIBUTION_MS) {
          set.add(move.from);
          set.add(move.to);
        }
      }
      set.add(shard);
      return set;
    };

    // Warm-up: every tenant once, then let idle sockets settle, then the start figures.
    for (const tenant of ready.tenants) {
      const outcome = await runQuery(started.url, tenant, errorTexts);
      if (!outcome.ok) throw new Error(`warm-up query failed for ${tenant.tenantId}: ${outcome.codes.join(',')} ${outcome.why ?? ''}`);
    }
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const atStart = handles(pid);
    const tokensAtStart = ((await call({ cmd: 'counters' })) as EmulatorCounters).tokenRequests;

    process.stdout.write(`soak: ${DURATION_S} s, ${TENANTS} tenants on ${ready.shardUrls.length} shards, ${CONCURRENCY} in flight, a fault every ${FAULT_EVERY_MS} ms\n`);
    const plan = faultPlan(ready, call, shardOf);
    const originalStep = plan.step;
    const loadStart = Date.now();
    const end = loadStart + DURATION_S * 1000;
    const outcomes: Outcome[] = [];
    let peakRssKb = statusKb(pid, 'VmRSS');
    const sampler = setInterval(() => {
      peakRssKb = Math.max(peakRssKb, statusKb(pid, 'VmRSS'));
    }, 500);
    const faults = (async () => {
      while (Date.now() < end - 2_000) {
        await new Promise((r) => setTimeout(r, FAULT_EVERY_MS));
        const before = new Map(shardOf);
        await originalStep();
        for (const [tenantId, shard] of shardOf) if (before.get(tenantId) !== shard) moves.push({ tenantId, at: Date.now(), from: before.get(tenantId)!, to: shard });
      }
    })();
    const workers = Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < end) outcomes.push(await runQuery(started.url, pick(ready.tenants), errorTexts));
    });
    let lastReport = Date.now();
    const progress = setInterval(() => {
      if (Date.now() - lastReport < 15_000) return;
      lastReport = Date.now();
      process.stdout.write(`  ${Math.round((Date.now() - loadStart) / 1000)} s: ${outcomes.length} queries, ${outcomes.filter((o) => !o.ok).length} failed\n`);
    }, 1_000);
    await Promise.all([...workers, faults]);
    clearInterval(progress);
    const elapsedS = (Date.now() - loadStart) / 1000;
    await call({ cmd: 'clearFaults' });
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    clearInterval(sampler);
    const atEnd = handles(pid);
    peakRssKb = Math.max(peakRssKb, statusKb(pid, 'VmHWM'));
    const counters = (await call({ cmd: 'counters' })) as EmulatorCounters;

    // Verdicts.
    const failed = outcomes.filter((o) => !o.ok);
    const unexpected = failed.filter((o) => !expected(o, plan.injected, shardAt));
    const sum = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
    const tokenRequests = counters.tokenRequests - tokensAtStart;
    // Refreshed from 75 % of a token's life: per tenant at most one per 0.75 * lifetime, plus one per revocation or move.
    const perTenant = Math.ceil((elapsedS + SETTLE_MS / 1000) / (0.75 * TOKEN_LIFETIME_S)) + 1;
    const tokenBound = TENANTS * perTenant + sum(plan.counts.revocations) + sum(plan.counts.moves);
    const secrets = ready.tenants.map((t) => t.clientSecret);
    const leaks = [...logs, ...errorTexts].filter(
      (line) => secrets.some((s) => line.includes(s)) || /Bearer\s+[A-Za-z0-9._~+/-]{8,}/.test(line) || /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\./.test(line),
    );
    const byCode = new Map<string, number>();
    for (const o of failed) for (const code of o.codes) byCode.set(code, (byCode.get(code) ?? 0) + 1);
    const faultKinds = new Map<string, number>();
    for (const f of plan.injected) faultKinds.set(f.kind, (faultKinds.get(f.kind) ?? 0) + 1);

    const rows: Array<[string, string, string]> = [
      ['duration', `${elapsedS.toFixed(0)} s`, ''],
      ['queries', String(outcomes.length), `${(outcomes.length / elapsedS).toFixed(0)} /s; served ${outcomes.length - failed.length}`],
      ['failures (expected, from injected faults)', String(failed.length - unexpected.length), [...byCode].map(([c, n]) => `${c} ${n}`).join(', ')],
      ['failures that should not have failed', String(unexpected.length), unexpected.length === 0 ? 'must be 0: ok' : 'must be 0: FAIL'],
      ['faults injected', String(plan.injected.length + sum(plan.counts.revocations) + sum(plan.counts.moves)), [...faultKinds].map(([k, n]) => `${k} ${n}`).concat([`revoke ${sum(plan.counts.revocations)}`, `move ${sum(plan.counts.moves)}`]).join(', ')],
      ['token requests', String(tokenRequests), `bound ${tokenBound} = ${TENANTS} tenants x (ceil(${elapsedS.toFixed(0)} s / (0.75 x ${TOKEN_LIFETIME_S} s)) + 1) + revocations + moves: ${tokenRequests <= tokenBound ? 'ok' : 'FAIL'}`],
      ['upstream list calls', String(counters.listRequests.locations + counters.listRequests.shifts), `${((counters.listRequests.locations + counters.listRequests.shifts) / outcomes.length).toFixed(2)} per query`],
      ['peak RSS', `${(peakRssKb / 1024).toFixed(0)} MB`, ''],
      ['open handles start / end', `${atStart.handles} / ${atEnd.handles}`, atEnd.handles <= atStart.handles + 4 ? 'flat' : 'GROWN'],
      ['open sockets start / end', `${atStart.sockets} / ${atEnd.sockets}`, atEnd.sockets <= atStart.sockets + 4 ? 'flat' : 'GROWN'],
      ['log lines / error bodies swept', `${logs.length} / ${errorTexts.length}`, ''],
      ['secrets or tokens found', String(leaks.length), leaks.length === 0 ? 'must be 0: ok' : 'must be 0: FAIL'],
    ];
    const width = Math.max(...rows.map((r) => r[0].length));
    process.stdout.write(`\n| ${'figure'.padEnd(width)} | value | note |\n|${'-'.repeat(width + 2)}|---|---|\n`);
    for (const [name, value, note] of rows) process.stdout.write(`| ${name.padEnd(width)} | ${value} | ${note} |\n`);
    for (const o of unexpected.slice(0, 10)) {
      process.stdout.write(`unexpected: +${((o.at - loadStart) / 1000).toFixed(1)} s ${o.tenantId} (shard ${[...shardAt(o.tenantId, o.at, o.end)].join('/')}) ${o.codes.join(',')} ${o.why ?? ''}\n`);
    }
    if (unexpected.length > 0) {
      for (const f of plan.injected) process.stdout.write(`  fault ${f.kind} +${((f.from - loadStart) / 1000).toFixed(1)} s ${f.tenantId ?? `shard ${f.shard}`}\n`);
      for (const m of moves) process.stdout.write(`  move +${((m.at - loadStart) / 1000).toFixed(1)} s ${m.tenantId} from shard ${m.from}\n`);
    }
    for (const line of leaks.slice(0, 3)) process.stdout.write(`leak: ${line.slice(0, 200)}\n`);
    const ok = unexpected.length === 0 && leaks.length === 0 && tokenRequests <= tokenBound && atEnd.handles <= atStart.handles + 4;
    process.exitCode = ok ? 0 : 1;
  } finally {
    subgraph?.kill('SIGTERM');
    if (subgraph && subgraph.exitCode === null) await new Promise((r) => subgraph!.once('exit', r));
    emulatorChild.disconnect();
    if (emulatorChild.exitCode === null) await new Promise((r) => emulatorChild.once('exit', r));
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`soak: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
