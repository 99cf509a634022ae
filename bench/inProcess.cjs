// What bench/hotpath.cjs and bench/retained.cjs share: the upstream emulator and one server
// in this process, from a build's dist/ folder (tsc's single modules: dist/server.js …,
// the same code the bundle holds).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/**
 * Starts the emulator with `tenants` (emulator `makeTenant` records) and the server under
 * test: `target` is 'subgraph' (configured as deployed: production, trusted header),
 * 'apollo' (the bench's lean naive server) or 'floor:<mode>' (bench/floor, mode graphql or proxy).
 * Resolves to { emulator, server (with .url), close() }.
 */
async function startInProcess({ dist, tenants, latencyMs = 0, target = 'subgraph' }) {
  const { startEmulator } = require(path.join(dist, 'emulator'));
  process.env.NODE_ENV = 'production';
  const emulator = await startEmulator({ tenants, latencyMs });
  const server = await startTarget({ dist, tenants, emulator, target });
  return {
    emulator,
    server,
    async close() {
      await (server.close ?? server.stop).call(server);
      await emulator.close();
    },
  };
}

/**
 * One server under test (as `startInProcess` names them) on an emulator already running,
 * from the build in `dist`: bench/interleaved.cjs runs several side by side.
 * Resolves to the server (with .url, and .close or .stop).
 */
async function startTarget({ dist, tenants, emulator, target }) {
  process.env.NODE_ENV = 'production';
  const credentials = tenants.map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, scope: 'shifts.read' }));
  const where = { authUrl: emulator.authUrl, tenants: credentials, port: 0, host: '127.0.0.1' };
  let server;
  if (target === 'apollo') {
    server = await require(path.join(dist, 'bench', 'bench', 'naive', 'server.js')).startNaiveServer({ ...where, lean: true });
  } else if (target.startsWith('floor:')) {
    server = await require(path.join(dist, 'bench', 'bench', 'floor', 'server.js')).startFloorServer({ ...where, mode: target.slice('floor:'.length) });
  } else {
    const { loadConfig } = require(path.join(dist, 'config'));
    const { startServer } = require(path.join(dist, 'server'));
    const { createLogger } = require(path.join(dist, 'observability', 'logger'));
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wfs-in-process-')), 'tenants.json');
    fs.writeFileSync(file, JSON.stringify(credentials));
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', WFS_AUTH_URL: emulator.authUrl, WFS_TENANTS_FILE: file, WFS_CURSOR_SECRET: 'in-process-cursor-secret-0123456789abcdef', WFS_TRUSTED_NETWORK: 'true', WFS_API_BASE_ALLOW: '127.0.0.1', LOG_LEVEL: 'error', NODE_ENV: 'production', ...(process.env.FRESHNESS && { WFS_FRESHNESS_SECONDS: process.env.FRESHNESS }) });
    server = await startServer(config, { logger: createLogger('error') });
  }
  return server;
}

/** The target named by the environment: APOLLO=1, FLOOR=<mode>, else the subgraph. */
function targetFromEnv(env = process.env) {
  if (env.APOLLO) return 'apollo';
  if (env.FLOOR) return `floor:${env.FLOOR}`;
  return 'subgraph';
}

module.exports = { startInProcess, startTarget, targetFromEnv };
