import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAuthHandler } from './auth';
import { FaultQueue } from './faults';
import { originFor, Timers } from './http';
import { demoTenants } from './seed';
import { createShardHandler, listOf } from './shard';
import { freshCounters, validateSettings, type EmulatorState } from './state';
import { TokenAuthority } from './tokens';
import { RESOURCES, ResourceSet } from '../../src/upstream/resources';
import type { Emulator, EmulatorOptions, EmulatorTenant } from './types';

// Copies, so moving a tenant or a test editing its fixtures never affects the other.
function copyTenants(tenants: readonly EmulatorTenant[], shardCount: number, resources: ResourceSet): EmulatorTenant[] {
  const copies = tenants.map((t) => {
    const copy: EmulatorTenant = { ...t, grantedScopes: [...t.grantedScopes] };
    for (const { name } of resources.all()) {
      const records = listOf(t, name);
      if (records) Object.assign(copy, { [name]: [...records] });
    }
    return copy;
  });
  const ids = new Set<string>();
  const clients = new Set<string>();
  for (const tenant of copies) {
    if (ids.has(tenant.tenantId)) throw new RangeError(`emulator: duplicate tenantId ${tenant.tenantId}`);
    if (clients.has(tenant.clientId)) throw new RangeError(`emulator: duplicate clientId ${tenant.clientId}`);
    if (!Number.isInteger(tenant.shard) || tenant.shard < 0 || tenant.shard >= shardCount) {
      throw new RangeError(`emulator: tenant ${tenant.tenantId} is on shard ${tenant.shard}, but there are ${shardCount} shards`);
    }
    ids.add(tenant.tenantId);
    clients.add(tenant.clientId);
  }
  return copies;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`emulator: ${name} must be a positive integer, got ${value}`);
  return value;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

// Stops listening and destroys every socket: idle keep-alive ones and those of hanging
// requests, which would otherwise keep close() waiting forever.
function shutdown(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  return closed;
}

/**
 * Starts the upstream emulator: an auth server with the token endpoint and one server
 * per shard, all on loopback (ephemeral ports by default), as docs/upstream.md describes.
 */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const host = options.host ?? '127.0.0.1';
  const shardPorts = options.shardPorts ?? [0, 0];
  if (shardPorts.length < 1) throw new RangeError('emulator: shardPorts needs at least one shard');
  const prefix = (options.authPathPrefix ?? '/auth').replace(/\/+$/, '');
  if (prefix !== '' && !prefix.startsWith('/')) throw new RangeError(`emulator: authPathPrefix must start with "/", got ${prefix}`);
  const settings = {
    pageReferenceFormat: options.pageReferenceFormat ?? 'absolute',
    tokenLifetimeSeconds: options.tokenLifetimeSeconds ?? 900,
    latencyMs: options.latencyMs ?? 0,
    maxPageSize: positiveInteger('maxPageSize', options.maxPageSize ?? 100),
    defaultPageSize: positiveInteger('defaultPageSize', options.defaultPageSize ?? Math.min(20, options.maxPageSize ?? 100)),
  };
  validateSettings(settings);
  if (settings.defaultPageSize > settings.maxPageSize) throw new RangeError('emulator: defaultPageSize must not exceed maxPageSize');
  const resources = new ResourceSet(RESOURCES);
  const tenants = copyTenants(options.tenants ?? demoTenants(), shardPorts.length, resources);

  const authServer = createServer();
  const shardServers = shardPorts.map(() => createServer());
  const servers = [authServer, ...shardServers];
  let authPort: number;
  let ports: number[];
  try {
    authPort = await listen(authServer, options.authPort ?? 0, host);
    ports = await Promise.all(shardServers.map((server, index) => listen(server, shardPorts[index]!, host)));
  } catch (error) {
    await Promise.all(servers.map(shutdown));
    throw error;
  }
  const authUrl = `${originFor(host, authPort)}${prefix}`;
  const state: EmulatorState = {
    settings,
    tenants,
    tenantsById: new Map(tenants.map((t) => [t.tenantId, t])),
    tenantsByClientId: new Map(tenants.map((t) => [t.clientId, t])),
    resources,
    shardOrigins: ports.map((port) => originFor(host, port)),
    counters: freshCounters(shardPorts.length, resources),
    faults: new FaultQueue(resources.all().map((resource) => resource.name)),
    tokens: new TokenAuthority(authUrl, options.now ?? Date.now),
    timers: new Timers(),
    cursorKey: randomBytes(32),
    rewriter: undefined,
  };
  // Handlers are attached only now that every origin is known (api_base, absolute references).
  const attach = (server: Server, handler: (req: IncomingMessage, res: ServerResponse) => void) => server.on('request', handler);
  attach(authServer, createAuthHandler(state, `${prefix}/identity/o/api/token`));
  shardServers.forEach((server, index) => attach(server, createShardHandler(state, index)));

  let closing: Promise<void> | undefined;
  return {
    authUrl,
    tokenUrl: `${authUrl}/identity/o/api/token`,
    shardUrls: [...state.shardOrigins],
    tenants,
    get counters() {
      return state.counters;
    },
    resetCounters() {
      // In place: whoever holds a reference to the counters object sees the reset.
      Object.assign(state.counters, freshCounters(shardPorts.length, resources));
    },
    configure(patch) {
      validateSettings(patch);
      if (patch.pageReferenceFormat !== undefined) settings.pageReferenceFormat = patch.pageReferenceFormat;
      if (patch.tokenLifetimeSeconds !== undefined) settings.tokenLifetimeSeconds = patch.tokenLifetimeSeconds;
      if (patch.latencyMs !== undefined) settings.latencyMs = patch.latencyMs;
    },
    injectFault: (fault) => state.faults.add(fault),
    clearFaults: () => state.faults.clear(),
    moveTenant(tenantId, shard) {
      const tenant = state.tenantsById.get(tenantId);
      if (!tenant) throw new RangeError(`moveTenant: unknown tenant ${tenantId}`);
      if (!Number.isInteger(shard) || shard < 0 || shard >= shardPorts.length) throw new RangeError(`moveTenant: no shard ${shard}`);
      tenant.shard = shard;
    },
    revokeTokens: (tenantId) => state.tokens.revoke(tenantId),
    setEnvelopeRewriter(fn) {
      state.rewriter = fn;
    },
    close() {
      closing ??= (async () => {
        state.timers.clear();
        await Promise.all(servers.map(shutdown));
      })();
      return closing;
    },
  };
}
