import type { Config } from './config';
import { startEmulator, startShiftChurn, type Emulator } from './emulator';
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
/** How often the demo's first company has a shift edited (emulator/churn.ts), in ms. */
export const DEMO_CHURN_MS = 10_000;

export async function startDemo(config: Config): Promise<Demo> {
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
    config: Object.freeze({ ...config, authUrl: emulator.authUrl, tenants }),
    defaultTenant: tenants[0]!.tenantId,
  };
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
    `Live updates: subscribe in the explorer (graphql-ws, same URL) to see the first company's rota change every ${DEMO_CHURN_MS / 1000} s`,
    `  subscription { shiftChanges { kind nodeId shift { id start end location { name } } } }`,
    '',
    'Or paste into the explorer:',
    ...EXAMPLE_QUERY.trimEnd().split('\n').map((line) => `  ${line}`),
    '',
  ];
  return lines.join('\n') + '\n';
}
