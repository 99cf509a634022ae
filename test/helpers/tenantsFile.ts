import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EmulatorTenant } from '../../src/emulator';

/**
 * Writes a WFS_TENANTS_FILE for the emulator's tenants (or a subset), returns its path.
 * A module of its own (test/helpers/subgraph.ts passes it on): a suite that starts the
 * built server needs this file, not the server's source that subgraph.ts loads (about
 * 2 CPU-seconds of a jest worker's module loading).
 */
export function writeTenantsFile(tenants: readonly Pick<EmulatorTenant, 'tenantId' | 'clientId' | 'clientSecret' | 'grantedScopes'>[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'wfs-tenants-')), 'tenants.json');
  writeFileSync(path, JSON.stringify(tenants.map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, scope: t.grantedScopes.join(' ') }))));
  return path;
}
