import { BrokenCircuitError, CircuitState, ConsecutiveBreaker, circuitBreaker, handleType, type CircuitBreakerPolicy } from 'cockatiel';
import { UpstreamError } from './errors';

/** What a breaker reports to metrics: one of these per shard origin. */
export type BreakerState = 'closed' | 'open' | 'half-open';

export interface ShardBreakerOptions {
  /** Consecutive failed calls (5xx, timeouts, connection errors) that open a shard's breaker. Default 5. */
  readonly failuresToOpen?: number;
  /** How long, in ms, an open breaker fails fast before one probe call may try the shard. Default 5 000. */
  readonly openMs?: number;
  readonly onStateChange?: (origin: string, state: BreakerState) => void;
  /** A call was refused because the breaker is open or probing. */
  readonly onFailFast?: () => void;
}

/**
 * Thrown inside the breaker for an outcome that counts as the shard failing; the
 * client turns it back into its transient outcome. Anything else thrown (a 4xx,
 * a caller's cancellation) passes through without counting.
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
 * their tenants never notice.
 */
export class ShardBreakers {
  private readonly breakers = new Map<string, CircuitBreakerPolicy>();

  constructor(private readonly options: ShardBreakerOptions = {}) {}

  /** The state of one shard's breaker (closed when the shard was never called). */
  state(origin: string): BreakerState {
    const breaker = this.breakers.get(origin);
    return breaker ? STATE_NAMES[breaker.state] : 'closed';
  }

  /**
   * Runs one upstream call through the shard's breaker. Fails fast with
   * UPSTREAM_UNAVAILABLE while the breaker is open, and while a half-open probe is
   * under way (other calls do not wait on the probe).
   */
  async run<T>(origin: string, call: () => Promise<T>): Promise<T> {
    const breaker = this.for(origin);
    if (breaker.state === CircuitState.HalfOpen) throw this.failingFast(origin);
    try {
      return await breaker.execute(call);
    } catch (error) {
      if (error instanceof BrokenCircuitError) throw this.failingFast(origin);
      throw error;
    }
  }

  private for(origin: string): CircuitBreakerPolicy {
    let breaker = this.breakers.get(origin);
    if (!breaker) {
      breaker = circuitBreaker(handleType(ShardFault), {
        halfOpenAfter: this.options.openMs ?? 5_000,
        breaker: new ConsecutiveBreaker(this.options.failuresToOpen ?? 5),
      });
      const onStateChange = this.options.onStateChange;
      if (onStateChange) breaker.onStateChange((state) => onStateChange(origin, STATE_NAMES[state]));
      this.breakers.set(origin, breaker);
    }
    return breaker;
  }

  private failingFast(origin: string): UpstreamError {
    this.options.onFailFast?.();
    return new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream shard ${origin} is failing; calls to it are paused for a few seconds (circuit breaker open)`, { cause: 'breaker_open' });
  }
}
