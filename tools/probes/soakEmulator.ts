/**
 * The upstream emulator as its own process for `npm run soak` (tools/probes/soak.ts): the
 * soak drives it over IPC (inject a fault, revoke tokens, move a tenant, read the
 * counters), so the subgraph under test and the upstream never share a process.
 */
import { makeTenant, startEmulator } from '../emulator';
import type { FaultSpec } from '../emulator/types';

type Command =
  | { id: number; cmd: 'fault'; spec: FaultSpec }
  | { id: number; cmd: 'clearFaults' }
  | { id: number; cmd: 'revoke'; tenantId: string }
  | { id: number; cmd: 'move'; tenantId: string; shard: number }
  | { id: number; cmd: 'counters' };

async function main(): Promise<void> {
  const tenantCount = Number(process.env.SOAK_TENANTS ?? '6');
  const tenants = Array.from({ length: tenantCount }, (_, index) =>
    makeTenant({
      tenantId: `50a4c0de-0000-4000-8000-${String(index + 1).padStart(12, '0')}`,
      name: `Soak Company ${index + 1}`,
      shard: index % 2,
      locationCount: 40 + index * 10,
      shiftCount: 120 + index * 30,
    }),
  );
  const emulator = await startEmulator({
    tenants,
    tokenLifetimeSeconds: Number(process.env.SOAK_TOKEN_LIFETIME ?? '60'),
    latencyMs: Number(process.env.SOAK_LATENCY_MS ?? '3'),
  });
  const send = (message: unknown) => process.send?.(message);
  send({
    type: 'ready',
    authUrl: emulator.authUrl,
    shardUrls: emulator.shardUrls,
    tenants: emulator.tenants.map((t) => ({
      tenantId: t.tenantId,
      clientId: t.clientId,
      clientSecret: t.clientSecret,
      scope: t.grantedScopes.join(' '),
      shard: t.shard,
      locationIds: t.locations.map((l) => l.id),
    })),
  });
  process.on('message', (message: Command) => {
    let result: unknown = null;
    try {
      switch (message.cmd) {
        case 'fault':
          emulator.injectFault(message.spec);
          break;
        case 'clearFaults':
          emulator.clearFaults();
          break;
        case 'revoke':
          emulator.revokeTokens(message.tenantId);
          break;
        case 'move':
          emulator.moveTenant(message.tenantId, message.shard);
          break;
        case 'counters':
          result = emulator.counters;
          break;
      }
      send({ id: message.id, result });
    } catch (error) {
      send({ id: message.id, error: String(error) });
    }
  });
  process.on('disconnect', () => {
    void emulator.close().then(() => process.exit(0));
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`soak emulator: ${String(error)}\n`);
  process.exit(1);
});
