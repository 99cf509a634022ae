/**
 * A GraphQL request over real HTTP, its error codes, a tenants file and the settings naming an emulator, without the server: what a test of
 * a spawned server needs. Kept apart from subgraph.ts (which re-exports them) so that such
 * a test does not load the whole server into jest only to post a query.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import type { EmulatorTenant } from '../../tools/emulator';

export interface GraphQLResponse<T = Record<string, unknown>> {
  status: number;
  data?: T | null;
  errors?: Array<{ message: string; path?: Array<string | number>; extensions?: { code?: string; [key: string]: unknown } }>;
  extensions?: Record<string, unknown>;
  /** The response's HTTP headers (`x-request-id`, ...). */
  headers?: Record<string, string | string[] | undefined>;
}

/** Writes a WFS_TENANTS_FILE for the emulator's tenants (or a subset), returns its path. */
export function writeTenantsFile(tenants: readonly Pick<EmulatorTenant, 'tenantId' | 'clientId' | 'clientSecret' | 'grantedScopes'>[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'wfs-tenants-')), 'tenants.json');
  writeFileSync(path, JSON.stringify(tenants.map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, scope: t.grantedScopes.join(' ') }))));
  return path;
}

/**
 * What a deployment sets to put the subgraph in front of `emulator`: its auth URL, a
 * tenants file of its tenants and a cursor secret. The spawned-server suites spread it
 * into their own settings.
 */
export function emulatorEnv(emulator: { readonly authUrl: string; readonly tenants: Parameters<typeof writeTenantsFile>[0] }, cursorSecret = 'e2e-cursor-secret-0123456789abcdefghij'): Record<string, string> {
  return { WFS_AUTH_URL: emulator.authUrl, WFS_TENANTS_FILE: writeTenantsFile(emulator.tenants), WFS_CURSOR_SECRET: cursorSecret };
}

/** POSTs one GraphQL request over real HTTP; the body with the HTTP status. `signal` lets a test leave mid-flight. */
export async function postGraphQL(
  url: string,
  body: { query: string; variables?: Record<string, unknown> | undefined },
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<GraphQLResponse<any>> {
  const response = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    ...(signal && { signal }),
  });
  return { ...((await response.body.json()) as GraphQLResponse), status: response.statusCode, headers: response.headers } as GraphQLResponse<any>;
}

/** The `extensions.code` of each error of a response, in order. */
export function errorCodes(response: { errors?: Array<{ extensions?: { code?: string } }> }): Array<string | undefined> {
  return (response.errors ?? []).map((error) => error.extensions?.code);
}
