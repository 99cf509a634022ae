import { BrokenCircuitError, CircuitState, ConsecutiveBreaker, circuitBreaker, handleType, type CircuitBreakerPolicy } from 'cockatiel';
import { UpstreamError } from '../errors';

/** What a breaker reports to metrics: one of these per shard origin. */
export type BreakerState = 'closed' | 'open' | 'half-open';

export interface ShardBreakerOptions {
  /** Consecutive failed calls (5xx, attempts that ran out of time, connection errors) that open a shard's breaker. Default 5. */
  readonly failuresToOpen?: number;
  /** How long, in ms, an open breaker fails fast before one probe call may try the shard. Default 5 000. */
  readonly openMs?: number;
  readonly onStateChange?: (origin: string, state: BreakerState) => void;
  /** A call was refused because the breaker is open or probing. */
  readonly onFailFast?: () => void;
}

/**
 * A call's result that counts as the shard failing (a 5xx, an attempt that ran out of
 * time, a connection error): the breaker counts it and hands it back as the call's
 * result, nothing thrown (the client's outcome, upstream/call/exchange.ts). Any other
 * result counts as the shard answering.
 */
export interface ShardFaultResult {
  readonly kind: 'shard-fault';
}

function isShardFaultResult(result: unknown): boolean {
  return (result as Partial<ShardFaultResult> | null)?.kind === 'shard-fault';
}

/**
 * A call may also throw a ShardFault: it counts as the shard failing and is thrown on.
 * Anything else thrown (a 4xx, a caller's cancellation) passes through without
 * counting either way.
 */
export class ShardFault extends Error {
  constructor(
    readonly error: UpstreamError,
    /** A 503's Retry-After, carried back to the client. */
    readonly retryAfterSeconds?: number,
  ) {
    super(error.message);
  }
}

/**
 * Breakers kept at most. Origins come from token claims, and a hostile token endpoint
 * can announce a new one per token: past this, breakers with nothing to remember
 * (closed, no failure counted, no call in flight) are dropped, then the oldest.
 */
const MAX_BREAKERS = 256;

interface Entry {
  readonly policy: CircuitBreakerPolicy;
  readonly counter: ConsecutiveBreaker;
  inFlight: number;
}

const STATE_NAMES: Record<CircuitState, BreakerState> = {
  [CircuitState.Closed]: 'closed',
  [CircuitState.Open]: 'open',
  [CircuitState.HalfOpen]: 'half-open',
  [CircuitState.Isolated]: 'open',
};

/**
 * A circuit breaker per shard origin (cockatiel's): a shard that keeps failing is
 * not called for a while, so its tenants' queries fail in milliseconds instead of
 * each paying the full timeout and retry, and the shard is not hammered while it
 * recovers. After `openMs` one probe call goes through (half-open): success closes
 * the breaker, failure opens it again. Other shards have their own breakers, so
 * their tenants never notice. At most MAX_BREAKERS are kept.
 */
export class ShardBreakers {
  private readonly breakers = new Map<string, Entry>();

  constructor(private readonly options: ShardBreakerOptions = {}) {}

  /** Breakers kept now (for tests and diagnostics). */
  get size(): number {
    return this.breakers.size;
  }

  /** The state of one shard's breaker (closed when the shard was never called). */
  state(origin: string): BreakerState {
    const entry = this.breakers.get(origin);
    return entry ? STATE_NAMES[entry.policy.state] : 'closed';
  }

  /**
   * Runs one upstream call through the shard's breaker. Fails fast with
   * UPSTREAM_UNAVAILABLE while the breaker is open, and while a half-open probe is
   * under way (other calls do not wait on the probe).
   */
  async run<T>(origin: string, call: () => Promise<T>): Promise<T> {
    const entry = this.for(origin);
    if (entry.policy.state === CircuitState.HalfOpen) throw this.failingFast(origin);
    entry.inFlight += 1;
    try {
      return await entry.policy.execute(call);
    } catch (error) {
      if (error instanceof BrokenCircuitError) throw this.failingFast(origin);
      throw error;
    } finally {
      entry.inFlight -= 1;
    }
  }

  private for(origin: string): Entry {
    let entry = this.breakers.get(origin);
    if (!entry) {
      if (this.breakers.size >= MAX_BREAKERS) this.sweep();
      const counter = new ConsecutiveBreaker(this.options.failuresToOpen ?? 5);
      const policy = circuitBreaker(handleType(ShardFault).orWhenResult(isShardFaultResult), { halfOpenAfter: this.options.openMs ?? 5_000, breaker: counter });
      const onStateChange = this.options.onStateChange;
      if (onStateChange) policy.onStateChange((state) => onStateChange(origin, STATE_NAMES[state]));
      entry = { policy, counter, inFlight: 0 };
      this.breakers.set(origin, entry);
    }
    return entry;
  }

  /** Makes room: first the breakers a fresh one would equal, then (all busy or failing) the oldest. */
  private sweep(): void {
    for (const [origin, entry] of this.breakers) {
      if (entry.policy.state === CircuitState.Closed && entry.counter.state === 0 && entry.inFlight === 0) this.breakers.delete(origin);
    }
    for (const origin of this.breakers.keys()) {
      if (this.breakers.size < MAX_BREAKERS) break;
      this.breakers.delete(origin);
    }
  }

  private failingFast(origin: string): UpstreamError {
    this.options.onFailFast?.();
    return new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream shard ${origin} is failing; calls to it are paused for a few seconds (circuit breaker open)`, { cause: 'breaker_open' });
  }
}
