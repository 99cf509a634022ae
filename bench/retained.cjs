// Retained heap per waiting request: N requests of N different companies wait on a slow upstream; heap after a full GC, against idle.
'use strict';
const fs = require('node:fs'); const os = require('node:os'); const path = require('node:path');
const dist = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'dist'));
const { startEmulator, makeTenant } = require(path.join(dist, 'emulator'));
const { loadConfig } = require(path.join(dist, 'config'));
const { startServer } = require(path.join(dist, 'server'));
const { createLogger } = require(path.join(dist, 'observability', 'logger'));
const { Agent, request } = require('undici');
const N = Number(process.env.N) || 400;
(async () => {
  process.env.NODE_ENV = 'production';
  const tenants = Array.from({ length: N }, (_, i) => makeTenant({ tenantId: `be0c0000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`, clientId: `c${i}`, clientSecret: `s${i}-abcdefgh`, grantedScopes: ['shifts.read'], shard: 0, locationCount: 200, shiftCount: 50 }));
  const emulator = await startEmulator({ tenants, latencyMs: 0 });
  const credentials = tenants.map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, scope: 'shifts.read' }));
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wfs-ret-')), 'tenants.json');
  fs.writeFileSync(file, JSON.stringify(credentials));
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', WFS_AUTH_URL: emulator.authUrl, WFS_TENANTS_FILE: file, WFS_CURSOR_SECRET: 'hotpath-cursor-secret-0123456789abcdef', WFS_TRUSTED_NETWORK: 'true', WFS_API_BASE_ALLOW: '127.0.0.1', LOG_LEVEL: 'error', NODE_ENV: 'production' });
  const server = process.env.APOLLO
    ? await require(path.join(dist, 'bench', 'bench', 'naive', 'server.js')).startNaiveServer({ authUrl: emulator.authUrl, tenants: credentials, port: 0, host: '127.0.0.1', lean: true })
    : await startServer(config, { logger: createLogger('error') });
  const agent = new Agent({ connections: 2 * N });
  const body = JSON.stringify({ query: process.env.Q || 'query BenchPages($after: String) { locations(first: 100, after: $after) { nodes { id name } pageInfo { hasNextPage endCursor } } }' });
  const one = async (t) => { const r = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': t.tenantId }, body, dispatcher: agent }); const text = await r.body.text(); if (r.statusCode !== 200 || text.includes('"errors"')) throw new Error(text.slice(0, 300)); };
  for (let round = 0; round < 3; round++) await Promise.all(tenants.map(one)); // tokens, warm
  const heap = () => { global.gc(); global.gc(); return process.memoryUsage().heapUsed; };
  const idle = heap();
  if (process.env.SNAP) require('v8').writeHeapSnapshot('/tmp/prof/idle-' + (process.env.APOLLO ? 'a' : 's') + '.heapsnapshot');
  emulator.configure({ latencyMs: 1500 });
  const pending = Promise.all(tenants.map(one));
  await new Promise((r) => setTimeout(r, 800));
  const waiting = heap();
  if (process.env.SNAP) require('v8').writeHeapSnapshot('/tmp/prof/wait-' + (process.env.APOLLO ? 'a' : 's') + '.heapsnapshot');
  await pending;
  process.stdout.write(`${process.env.APOLLO ? 'apollo' : 'subgraph'}: retained per waiting request ${((waiting - idle) / N / 1024).toFixed(2)} KiB (N=${N})\n`);
  await agent.close(); await (server.close ?? server.stop).call(server); await emulator.close(); process.exit(0);
})().catch((e) => { process.stderr.write(`${e.stack ?? e}\n`); process.exit(1); });
