/**
 * The bytes of variables the open subscriptions keep (the coerced values their
 * operations declare, measured as their JSON text), per connection, per company on the
 * replica and in all, against the gate's bounds (`limits.gate`, config/limits.ts): checked and taken with
 * no wait in between, so that a burst of subscribes cannot all pass.
 */
import type { SubscribeGateLimits } from './gateOptions';

export type VariableBytesReason = 'connection_bytes' | 'company_bytes' | 'replica_bytes';

export class VariableBytes {
  private readonly byCompany = new Map<string, number>();
  private replica = 0;
  /** What a subscribe past each bound is told. */
  readonly messages: Readonly<Record<VariableBytesReason, string>>;

  constructor(private readonly limits: Pick<SubscribeGateLimits, 'variableBytesPerConnection' | 'variableBytesPerCompany' | 'variableBytesPerReplica'>) {
    this.messages = {
      connection_bytes: `the variables of this connection's open subscriptions may keep at most ${kib(limits.variableBytesPerConnection)}; complete some, send smaller variables, or open another connection`,
      company_bytes: `the variables of your company's open subscriptions on this replica may keep at most ${kib(limits.variableBytesPerCompany)}; complete some or send smaller variables`,
      replica_bytes: `the variables of this replica's open subscriptions may keep at most ${kib(limits.variableBytesPerReplica)}; retry in a moment`,
    };
  }

  /** The bound `bytes` more would pass, for a connection that keeps `connectionBytes` and its company `tenantId`; undefined when none. */
  over(connectionBytes: number, tenantId: string, bytes: number): VariableBytesReason | undefined {
    if (connectionBytes + bytes > this.limits.variableBytesPerConnection) return 'connection_bytes';
    if ((this.byCompany.get(tenantId) ?? 0) + bytes > this.limits.variableBytesPerCompany) return 'company_bytes';
    if (this.replica + bytes > this.limits.variableBytesPerReplica) return 'replica_bytes';
    return undefined;
  }

  take(tenantId: string, bytes: number): void {
    this.byCompany.set(tenantId, (this.byCompany.get(tenantId) ?? 0) + bytes);
    this.replica += bytes;
  }

  give(tenantId: string, bytes: number): void {
    this.replica -= bytes;
    const left = (this.byCompany.get(tenantId) ?? 0) - bytes;
    if (left > 0) this.byCompany.set(tenantId, left);
    else this.byCompany.delete(tenantId);
  }
}

function kib(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${Math.round(bytes / 1024)} KiB`;
}
