import type { ApolloServerPlugin } from '@apollo/server';

/**
 * Demo mode answers a request that names no tenant for the first demo company (the
 * quick start relies on it). The response says so in `extensions.demoTenant`, so a
 * gateway that forgot to pass the tenant header notices instead of reading one demo
 * company's data as everyone's.
 */
export function demoTenantPlugin(options: { readonly tenantHeader: string; readonly defaultTenant: string }): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ request, response }) {
          if (response.body.kind !== 'single') return;
          if (request.http?.headers.get(options.tenantHeader)?.trim()) return;
          const result = response.body.singleResult;
          result.extensions = { ...result.extensions, demoTenant: options.defaultTenant };
        },
      };
    },
  };
}
