/**
 * Whether Redis answers, as one user of a connection sees it (the shared token store):
 * down at the first failure (a command that failed, the connection's error or close),
 * up again at the first answer or when the connection is ready. Each change is told
 * once, so an outage writes one line when it starts and one when it ends however many
 * commands failed in between, and `wfs_shared_token_store_up` follows Redis, not what
 * is stored in it: a value Redis returned that we then refuse (a record that fails its
 * seal, too long, of another type) is an answer, and says nothing about Redis.
 */

/** Which use of Redis failed; `connection` is the client losing Redis. */
export type RedisOperation = 'read' | 'write' | 'discard' | 'lock' | 'release' | 'connection';

export interface AvailabilityListener {
  /** Redis stopped answering: the first failure of the outage. */
  readonly onDown?: (operation: RedisOperation, error: Error) => void;
  /** Redis answers (again, or for the first time after start). */
  readonly onUp?: () => void;
}

export class RedisAvailability {
  /** `starting`: no answer and no failure yet (the connection is being made). */
  private state: 'starting' | 'up' | 'down';

  constructor(
    initiallyUp: boolean,
    private readonly listener: AvailabilityListener,
  ) {
    this.state = initiallyUp ? 'up' : 'starting';
  }

  get up(): boolean {
    return this.state === 'up';
  }

  answered(): void {
    if (this.state === 'up') return;
    this.state = 'up';
    tell(() => this.listener.onUp?.());
  }

  failed(operation: RedisOperation, error: Error): void {
    if (this.state === 'down') return;
    this.state = 'down';
    tell(() => this.listener.onDown?.(operation, error));
  }
}

function tell(listener: () => void): void {
  try {
    listener();
  } catch {
    // A failing listener must not turn a degraded store into a failing one.
  }
}
