import type { ApolloServerPlugin } from '@apollo/server';
import { answeredByDefault, type DemoDefault } from '../admission/identity';

/**
 * Demo mode answers a request that names no tenant for the first demo company (the
 * quick start relies on it). The response says so in `extensions.demoTenant`, so a
 * gateway that forgot to pass the tenant header notices instead of reading one demo
 * company's data as everyone's.
 */
export function demoTenantPlugin(demo: DemoDefault): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ request, response }) {
          if (response.body.kind !== 'single' || !answeredByDefault(demo, (name) => request.http?.headers.get(name))) return;
          const result = response.body.singleResult;
          result.extensions = { ...result.extensions, demoTenant: demo.defaultTenant };
        },
      };
    },
  };
}
