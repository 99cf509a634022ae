/**
 * The upstream emulator in a process of its own, so its work (JSON pages, simulated
 * latency timers) does not share an event loop with the load generator or with the
 * server under test. The parent drives it over IPC:
 *
 *   child → parent  { type: 'ready', authUrl, tenants }
 *   parent → child  { id, op: 'counters' | 'reset' | 'close' }
 *   child → parent  { id, result } or { id, error }
 *
 * Options come as JSON in argv[2] (see EmulatorProcessOptions).
 */
import { makeTenant, startEmulator, type Emulator } from '../tools/emulator';

export interface EmulatorProcessOptions {
  readonly latencyMs: number;
  readonly tenants: number;
  readonly locationsPerTenant: number;
  readonly shiftsPerTenant: number;
}

/** What the parent learns about each tenant: credentials and the ids it may look up. */
export interface BenchTenant {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scope: string;
  readonly locationIds: string[];
}

export interface EmulatorReady {
  readonly type: 'ready';
  readonly authUrl: string;
  readonly tenants: BenchTenant[];
}

/** The counters the bench reads, as plain numbers. */
export interface UpstreamCounters {
  readonly tokenRequests: number;
  readonly locations: number;
  readonly shifts: number;
  /** List calls of every list the emulator serves, whoever made them (queries and live polls alike). */
  readonly lists: number;
}

export function benchTenantId(index: number): string {
  return `be0c0000-0000-4000-8000-${String(index + 1).padStart(12, '0')}`;
}

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as EmulatorProcessOptions;
  const tenants = Array.from({ length: options.tenants }, (_, index) =>
    makeTenant({
      tenantId: benchTenantId(index),
      clientId: `bench-client-${index + 1}`,
      clientSecret: `bench-secret-${index + 1}-${Math.random().toString(36).slice(2)}`,
      grantedScopes: ['shifts.read'],
      shard: index % 2,
      locationCount: options.locationsPerTenant,
      shiftCount: options.shiftsPerTenant,
    }),
  );
  const emulator: Emulator = await startEmulator({ tenants, latencyMs: options.latencyMs });

  const counters = (): UpstreamCounters => ({
    tokenRequests: emulator.counters.tokenRequests,
    locations: emulator.counters.listRequests.locations,
    shifts: emulator.counters.listRequests.shifts,
    lists: Object.values(emulator.counters.listRequests).reduce((sum, calls) => sum + calls, 0),
  });

  process.on('message', (message: { id: number; op: string }) => {
    const reply = (payload: object) => process.send?.({ id: message.id, ...payload });
    switch (message.op) {
      case 'counters':
        return reply({ result: counters() });
      case 'reset':
        emulator.resetCounters();
        return reply({ result: counters() });
      case 'close':
        void emulator.close().finally(() => {
          reply({ result: null });
          process.exit(0);
        });
        return;
      default:
        return reply({ error: `unknown op ${message.op}` });
    }
  });
  process.on('disconnect', () => void emulator.close().finally(() => process.exit(0)));

  const ready: EmulatorReady = {
    type: 'ready',
    authUrl: emulator.authUrl,
    tenants: emulator.tenants.map((tenant) => ({
      tenantId: tenant.tenantId,
      clientId: tenant.clientId,
      clientSecret: tenant.clientSecret,
      scope: tenant.grantedScopes.join(' '),
      locationIds: tenant.locations.map((location) => String(location.id)),
    })),
  };
  process.send?.(ready);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench emulator: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
