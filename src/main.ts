import { ConfigError, loadConfig, startupFailureLine, type Config } from './config';
import type * as DemoModule from './demo';
import { heapLimit, heapWarning } from './heapLimit';
import { accountSummary } from './memory/account';
import { createLogger } from './observability/logger';
import { startServer } from './server';

/** Start-up: load the configuration, start the server, exit 1 with one clear line on error. */
export function main(): void {
  start().catch((error: unknown) => {
    process.stderr.write(startupFailureLine(error));
    process.exit(1);
  });
}

async function start(): Promise<void> {
  let config: Config = loadConfig();
  let demo: DemoModule.Demo | undefined;
  // The demo (and the emulator it embeds) is loaded only in demo mode: a deployment's cold start skips it.
  const demoModule = config.authUrl ? undefined : (require('./demo') as typeof DemoModule);
  if (demoModule) {
    demo = await demoModule.startDemo(config);
    config = demo.config;
  }
  const logger = createLogger(config.logLevel);
  const heap = heapLimit();
  const noHeapLimit = heapWarning(heap);
  if (noHeapLimit) logger.warn({ heapLimitMiB: heap.limitMiB }, noHeapLimit);
  if (config.cursorSecretGenerated && !demo) {
    logger.warn('WFS_CURSOR_SECRET is not set: cursors are sealed with a random key and stop working on restart or on another replica');
  }
  if (config.jwt && config.jwt.audience === undefined) {
    logger.warn('WFS_JWT_NO_AUDIENCE=true: tokens are accepted without an audience check, so a token the same identity provider issued for another application is accepted too');
  }
  if (demo && config.production) {
    logger.warn('WFS_DEMO=true with NODE_ENV=production: serving the embedded emulator\'s fake demo companies, not a real upstream');
  }
  if (!config.jwt && !demo && config.production && !config.routerSecret) {
    logger.warn(
      { header: config.tenantHeader },
      'WFS_TRUSTED_NETWORK=true: trusted-header mode without WFS_ROUTER_SECRET, so whoever reaches this port can read any tenant by naming it in the header; only the router may reach it',
    );
  } else if (!config.jwt && !demo) {
    logger.info({ header: config.tenantHeader }, 'trusted-header mode: the tenant comes from a request header; expose this subgraph only to the router, on a private network');
  }
  const server = await startServer(config, {
    logger,
    ...(demo && { defaultTenant: demo.defaultTenant, explorerHeaders: { [config.tenantHeader]: demo.defaultTenant } }),
  }).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new ConfigError('PORT', `port ${config.port} is already in use; set PORT to a free port`);
    throw error;
  });
  if (demo && demoModule) process.stdout.write(demoModule.demoBanner(demo, server.url));
  // Serving is not being ready: /ready waits for the token endpoint check (or a real
  // token), and the line says which of the two this is.
  const notReady = server.readinessProblem();
  // The memory account (memory/account.ts): what every bound filled at once may hold, against what the heap leaves clients.
  const memory = accountSummary(server.memory.account);
  if (server.memory.kind === 'scaled') {
    const { worstCaseMiB } = accountSummary(server.memory.before);
    logger.warn(
      { ...memory, scaledBy: Math.round(server.memory.factor * 1000) / 1000, limits: server.memory.limits },
      `memory account: the default bounds filled at once (${worstCaseMiB} MiB) do not fit the ${memory.budgetMiB} MiB a heap of ${memory.heapLimitMiB} MiB leaves clients; connections, requests in flight, subscriptions and the byte bounds are scaled down by the same factor (docs/limits.md, "The memory account")`,
    );
  }
  const started = { url: server.url, tenants: config.tenants.length, redis: Boolean(config.redisUrl), heapLimitMiB: heap.limitMiB, memoryBudgetMiB: memory.budgetMiB, memoryWorstCaseMiB: memory.worstCaseMiB };
  if (notReady === undefined) logger.info({ ...started, ready: true }, 'subgraph ready');
  else logger.info({ ...started, ready: false, reason: notReady }, 'subgraph listening, not ready yet: /ready answers 503 until the token endpoint answers like one');

  // SIGTERM (Kubernetes, Compose, systemd) drains first: for WFS_DRAIN_SECONDS /ready
  // answers 503 and every answer closes its connection, while the replica still serves, so
  // a balancer that polls /ready or learns of the stop (an endpoint update) moves its
  // traffic away before the port closes. SIGINT (Ctrl+C at a terminal), or a second
  // signal during the drain, stops at once.
  let phase: 'serving' | 'draining' | 'stopping' = 'serving';
  let drainTimer: NodeJS.Timeout | undefined;
  const stop = (signal: string) => {
    if (phase === 'stopping') return;
    clearTimeout(drainTimer);
    phase = 'stopping';
    logger.info({ signal }, 'shutting down');
    // Apollo's drain cuts the connections still open 10 s after the port closes; 20 s
    // also covers closing Redis and flushing traces. The Kubernetes example's grace
    // period (30 s) and Compose's stop_grace_period cover the default drain plus this.
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    // The demo's emulator closes after the server: requests still in flight read from it.
    const closing = server.close();
    void Promise.allSettled([closing, closing.finally(() => demo?.emulator.close())]).then(([closed]) => {
      if (closed.status === 'rejected') logger.error({ err: closed.reason }, 'shutdown: closing the server failed');
      else logger.info('stopped: requests drained, upstream connections and the token store closed, traces flushed');
      process.exit(closed.status === 'rejected' ? 1 : 0);
    });
  };
  const drain = (signal: string) => {
    if (phase !== 'serving') return stop(signal);
    phase = 'draining';
    server.drain();
    logger.info({ signal, drainSeconds: config.drainSeconds }, 'draining: /ready answers 503 and answers close their connections; stops accepting connections after WFS_DRAIN_SECONDS');
    drainTimer = setTimeout(() => stop(signal), config.drainSeconds * 1000);
  };
  process.on('SIGTERM', () => drain('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
