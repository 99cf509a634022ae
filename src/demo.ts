import { NUMERIC_SETTINGS, type Config } from './config';
import { startEmulator, startShiftChurn, type Emulator } from '../tools/emulator';
import { EXAMPLE_QUERY } from './exampleQuery';

export interface Demo {
  readonly emulator: Emulator;
  readonly config: Config;
  readonly defaultTenant: string;
}

/**
 * Demo mode (no WFS_AUTH_URL): the embedded emulator plays the upstream, with its
 * seeded companies as the configured tenants. Everything else runs as in production.
 */
/** How often the demo's first company has a shift edited (tools/emulator/churn.ts), in ms. */
export const DEMO_CHURN_MS = 10_000;
/**
 * The demo's live poll interval, in seconds, unless WFS_POLL_INTERVAL_SECONDS is set:
 * well under DEMO_CHURN_MS, so each edit reaches a subscriber on its own, within about
 * 3 s (the default 15 s would deliver the first edit after up to 17 s and the rest in pairs).
 */
export const DEMO_POLL_INTERVAL_SECONDS = 2;

/** `env` is where `config` was loaded from: an interval set there (or in `config`, away from the default) is kept. */
export async function startDemo(config: Config, env: NodeJS.ProcessEnv = process.env): Promise<Demo> {
  const emulator = await startEmulator();
  // A live rota: subscriptions (`shiftChanges`) see an edit every DEMO_CHURN_MS.
  startShiftChurn(emulator.tenants[0]!, DEMO_CHURN_MS);
  const tenants = emulator.tenants.map((tenant) => ({
    tenantId: tenant.tenantId,
    clientId: tenant.clientId,
    clientSecret: tenant.clientSecret,
    scope: tenant.grantedScopes.join(' '),
  }));
  return {
    emulator,
    config: Object.freeze({
      ...config,
      authUrl: emulator.authUrl,
      tenants,
      pollIntervalSeconds:
        env['WFS_POLL_INTERVAL_SECONDS'] === undefined && config.pollIntervalSeconds === NUMERIC_SETTINGS.WFS_POLL_INTERVAL_SECONDS.default
          ? DEMO_POLL_INTERVAL_SECONDS
          : config.pollIntervalSeconds,
    }),
    defaultTenant: tenants[0]!.tenantId,
  };
}

/**
 * When the demo's edits reach a subscriber, for a poll interval in seconds: each poll
 * waits the interval plus up to 10 % jitter, and the first poll after subscribing is the
 * baseline, so the first edit arrives at the first poll at or after it (edits come every
 * DEMO_CHURN_MS whether or not anyone subscribes).
 */
export function liveArrival(pollIntervalSeconds: number): string {
  const churnSeconds = DEMO_CHURN_MS / 1000;
  const pollAtMost = pollIntervalSeconds * 1.1;
  const firstAtMost = Math.ceil(Math.ceil(churnSeconds / pollIntervalSeconds) * pollAtMost);
  return pollAtMost < churnSeconds
    ? `each edit arrives on its own, within ${Math.ceil(pollAtMost)} s of being made (the first within ${firstAtMost} s of subscribing)`
    : `the edits made between two polls arrive together, one batch every ${pollIntervalSeconds} s or so (the first within ${firstAtMost} s of subscribing)`;
}

/** What the banner says of the freshness window (docs/caching.md). */
export function freshnessLine(freshnessSeconds: number): string {
  return freshnessSeconds === 0
    ? 'Freshness: WFS_FRESHNESS_SECONDS=0, every read goes upstream and every answer is no-store (docs/caching.md).'
    : `Freshness: WFS_FRESHNESS_SECONDS=${freshnessSeconds}, an answer may be up to ${freshnessSeconds} s behind the upstream; a page read again within it comes from memory (docs/caching.md).`;
}

/** The start-up text of demo mode: where to go and what to paste. */
export function demoBanner(demo: Demo, graphqlUrl: string): string {
  const header = demo.config.tenantHeader;
  // With WFS_ROUTER_SECRET set, every request needs it too; the banner names the
  // variable for the shell to expand, never the secret itself.
  const routerHeader = demo.config.routerSecret ? ` -H "router-authorization: $WFS_ROUTER_SECRET"` : '';
  const lines = [
    '',
    `Workforce-scheduling subgraph (demo mode, on the embedded upstream emulator at ${demo.emulator.authUrl})`,
    '',
    `  GraphQL:   ${graphqlUrl}`,
    demo.config.explorer
      ? `  Explorer:  ${graphqlUrl.replace(/\/graphql$/, '/')}  (open in a browser)`
      : '  Explorer:  off (NODE_ENV=production); set WFS_EXPLORER=true to serve it at /',
    ...(demo.config.routerSecret && demo.config.explorer ? ['             WFS_ROUTER_SECRET is set: add the header `router-authorization` with its value in the explorer\'s Headers tab'] : []),
    '',
    `Demo tenants (send one in the "${header}" header; without it you get the first one, and extensions.demoTenant says so):`,
    ...demo.emulator.tenants.map((t) => `  ${t.tenantId}  ${t.name}  [${t.grantedScopes.join(' ')}]`),
    '',
    'Try:',
    `  curl -s ${graphqlUrl} -H 'content-type: application/json' -H '${header}: ${demo.defaultTenant}'${routerHeader} \\`,
    `    -d '{"query":"{ locations(first: 5) { nodes { id name } } shifts(first: 3) { nodes { id start end location { name } } } }"}'`,
    '',
    `Live updates: subscribe in the explorer (graphql-ws, same URL) to the first company's rota. The emulator edits one`,
    `of its shifts every ${DEMO_CHURN_MS / 1000} s; the subgraph polls it every ${demo.config.pollIntervalSeconds} s (±10 %) while someone subscribes, so`,
    `${liveArrival(demo.config.pollIntervalSeconds)}:`,
    `  subscription { shiftChanges { kind nodeId shift { id start end location { name } } } }`,
    '',
    freshnessLine(demo.config.freshnessSeconds),
    '',
    'Or paste into the explorer:',
    ...EXAMPLE_QUERY.trimEnd().split('\n').map((line) => `  ${line}`),
    '',
  ];
  return lines.join('\n') + '\n';
}
