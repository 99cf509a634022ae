/**
 * The poll leases of redisCoordinator.ts: one Redis key per polled key, whose sealed
 * value names the replica that polls it and until when. Read and taken in scripts
 * (atomic on the server) while the seal is checked here; a value that is no replica's
 * is dropped (reason `lease`) and taken over at once.
 */
import type { Redis } from 'ioredis';
import { seal, unseal } from '../upstream/redis/seal';
import type { RedisDropReason } from './redisMessages';
import { DELETE_IF_HOLDS, TAKE_IF_UNCHANGED } from '../upstream/redis/scripts';

/** A lease outlives its holder's next poll by this factor of the delay (a late poll keeps it). */
const LEASE_DELAYS = 3;
/** At least this long, in ms (production; tests pass `minLeaseMs`). */
export const MIN_LEASE_MS = 5_000;
/** A lease value longer than this is nobody's (a sealed one is about 130 bytes). */
const MAX_LEASE_BYTES = 512;

/*
 * READ answers nil when free, 0 when the key holds something no replica writes
 * (another type, or too long to be a lease), else the value. Taking and releasing are
 * the token store's own scripts (upstream/redis/scripts.ts: TAKE_IF_UNCHANGED,
 * DELETE_IF_HOLDS).
 */
const READ_LEASE = `
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return false end
if kind ~= 'string' or redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[1]) then return 0 end
return redis.call('GET', KEYS[1])`;

export interface LeaseParts {
  readonly commands: Redis;
  /** The sealing key (liveSealingKey); each value is bound to its lease's Redis key. */
  readonly key: Buffer;
  readonly replicaId: string;
  /** The Redis key of the lease on a polled key. */
  readonly leaseName: (name: string) => string;
  /** The shortest lease, in ms. */
  readonly minLeaseMs: number;
  readonly now: () => number;
  /** Told of a lease value dropped, with the lease's Redis key. */
  readonly dropped: (reason: RedisDropReason, name: string) => void;
  /** Told that Redis failed to answer. */
  readonly report: (error: Error) => void;
  /** Told that Redis answered a lease's read and take (after a failure: it is back). */
  readonly answered: () => void;
}

export interface Leases {
  /** Whether this replica polls `name` now (Coordinator.lead): it holds, takes or renews its lease; true when Redis does not answer. */
  lead(name: string, holdMs: number): Promise<boolean>;
  /** Gives up the lease on `name`, if ours. */
  release(name: string): void;
  /** Gives up every lease held. */
  releaseAll(): void;
}

export function redisLeases(parts: LeaseParts): Leases {
  const { commands, key, replicaId, leaseName, now, dropped } = parts;
  const held = new Map<string, string>();

  /** The lease's holder and end, or null when the value is no replica's. */
  const openLease = (name: string, value: string): { replica: string; until: number } | null => {
    const opened = unseal(key, name, value);
    if (!('text' in opened)) return null;
    try {
      const { replica, until } = JSON.parse(opened.text) as Record<string, unknown>;
      return typeof replica === 'string' && typeof until === 'number' && Number.isFinite(until) ? { replica, until } : null;
    } catch {
      return null;
    }
  };

  const release = (name: string) => {
    const value = held.get(name);
    held.delete(name);
    if (value !== undefined && commands.status === 'ready') commands.eval(DELETE_IF_HOLDS, 1, leaseName(name), value).catch(() => undefined);
  };

  return {
    async lead(name, holdMs) {
      if (commands.status !== 'ready') return true;
      const lease = leaseName(name);
      const ms = Math.max(parts.minLeaseMs, Math.ceil(holdMs * LEASE_DELAYS));
      try {
        const current = (await commands.eval(READ_LEASE, 1, lease, MAX_LEASE_BYTES)) as string | number | null;
        let expected: string;
        if (current === null) {
          expected = '';
        } else if (typeof current !== 'string') {
          dropped('lease', lease);
          expected = '*';
        } else {
          const holder = openLease(lease, current);
          if (!holder) dropped('lease', lease);
          // Another replica's lease, within its time (and one lease more, for clocks that
          // differ); past that it was kept alive by someone else (PERSIST, a replay).
          else if (holder.replica !== replicaId && holder.until + ms > now()) {
            parts.answered();
            return false;
          }
          expected = current;
        }
        const value = seal(key, lease, JSON.stringify({ replica: replicaId, until: now() + ms }));
        const taken = (await commands.eval(TAKE_IF_UNCHANGED, 1, lease, expected, value, ms, MAX_LEASE_BYTES)) === 1;
        parts.answered();
        if (taken) held.set(name, value);
        return taken;
      } catch (error) {
        parts.report(error as Error);
        return true;
      }
    },
    release,
    releaseAll() {
      for (const name of [...held.keys()]) release(name);
    },
  };
}
