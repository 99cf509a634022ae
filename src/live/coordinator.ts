/**
 * Who polls a key, and how its changes reach the other replicas. Alone (no
 * WFS_REDIS_URL) this replica always polls and tells nobody; with Redis see
 * redisCoordinator.ts (messages and leases sealed with the fleet's key, everything
 * else read from Redis dropped and counted).
 */
import type { RecordChange } from './snapshot';

export interface Coordinator {
  /** Whether this replica polls `key` now; renews its lease for `holdMs` when it does. */
  lead(key: string, holdMs: number): Promise<boolean>;
  /** Hands this replica's changes of `key` to the others. */
  publish(key: string, changes: readonly RecordChange[]): void;
  /** Starts hearing the other replicas' changes of `key`. */
  listen(key: string, onChanges: (changes: readonly RecordChange[]) => void): void;
  /** Stops hearing `key` and gives up its lease if held. */
  forget(key: string): void;
  close(): Promise<void>;
}

export const LOCAL_COORDINATOR: Coordinator = {
  lead: async () => true,
  publish: () => undefined,
  listen: () => undefined,
  forget: () => undefined,
  close: async () => undefined,
};
