import { ExponentialBackoff, fullJitterGenerator, type IBackoff } from 'cockatiel';

export interface RetryPolicyOptions {
  /** Retries of a transient fault (network error, timeout, 5xx) per page. Default 1 (the breaker handles a shard that keeps failing). */
  readonly maxRetries?: number;
  /** First backoff ceiling in ms. Default 100. */
  readonly initialDelayMs?: number;
  /** Largest backoff ceiling in ms. Default 2 000. */
  readonly maxDelayMs?: number;
}

/**
 * Exponential backoff with full jitter (cockatiel's generator): each wait is drawn
 * uniformly from 0 to a ceiling that doubles per attempt. Full jitter spreads the
 * retries of many requests that failed together over the whole window, so a shard
 * that comes back is not hit by a synchronised wave.
 */
export class RetryPolicy {
  private readonly backoff: ExponentialBackoff<number>;
  readonly maxRetries: number;

  constructor(options: RetryPolicyOptions = {}) {
    this.maxRetries = options.maxRetries ?? 1;
    this.backoff = new ExponentialBackoff({
      generator: fullJitterGenerator,
      initialDelay: options.initialDelayMs ?? 100,
      maxDelay: options.maxDelayMs ?? 2_000,
    });
  }

  /** A fresh schedule for one page call, with `maxRetries` retries (default the policy's). */
  schedule(maxRetries: number = this.maxRetries): RetrySchedule {
    return new RetrySchedule(this.backoff, maxRetries);
  }
}

/** The retries left to one page call, and the next wait. */
export class RetrySchedule {
  private retries = 0;
  private current: IBackoff<unknown> | undefined;

  constructor(
    private readonly backoff: ExponentialBackoff<number>,
    private readonly maxRetries: number,
  ) {}

  /** The wait in ms before the next retry, or `undefined` when none is left or it would not fit in `remainingMs`. */
  next(remainingMs: number): number | undefined {
    if (this.retries >= this.maxRetries) return undefined;
    this.current = this.current ? this.current.next(undefined) : this.backoff.next();
    const wait = this.current.duration;
    if (wait >= remainingMs) return undefined;
    this.retries += 1;
    return wait;
  }
}
