/**
 * Invalidation out (docs/caching.md): when a live poll sees a company's list change,
 * the gateways in front (WFS_CACHE_INVALIDATION_URLS, Apollo Router's invalidation
 * endpoint or anything that speaks its format) are told to drop what they keep of it:
 *
 *   POST [{"kind":"cache_tag","subgraphs":["wfs"],"cache_tag":"<company>:<list>"}, …]
 *   Authorization: <WFS_CACHE_INVALIDATION_KEY>
 *
 * The replica that holds the poll's lease sends (it alone sees the change first; the
 * others hear it through Redis), so the fleet sends once per change batch.
 *
 * Bounded: tags wait in a set of at most `maxQueued` (past it a tag is dropped and
 * counted); one batch is in flight at a time, carrying every tag queued meanwhile (at
 * most `maxTagsPerPost`); each endpoint gets a few attempts with backoff, within a
 * deadline. A tag that never arrives costs nothing but freshness within the contract:
 * every answer's `max-age` is at most the window, so a gateway that missed an
 * invalidation is at most the window behind. Every POST's outcome is counted.
 */
import { request, type Dispatcher } from 'undici';

/** What became of one POST to one endpoint (the `outcome` label of `wfs_cache_invalidations_total`), or of a tag not sent. */
export type InvalidationOutcome =
  /** The endpoint answered 2xx. */
  | 'sent'
  /** No 2xx within the attempts or the deadline (network error, timeout, 5xx, 429). */
  | 'failed'
  /** The endpoint answered another 4xx (a wrong key, a malformed body): not retried. */
  | 'rejected'
  /** A tag dropped because the queue was full. */
  | 'dropped';

export const INVALIDATION_OUTCOMES: readonly InvalidationOutcome[] = ['sent', 'failed', 'rejected', 'dropped'];

/** The subgraph's name in the supergraph (router/supergraph.yaml), which the invalidation names. */
export const SUBGRAPH_NAME = 'wfs';

export interface InvalidationOptions {
  readonly urls: readonly string[];
  /** Sent as `Authorization`, as it is (Apollo Router's `shared_key`). */
  readonly key: string;
  readonly onOutcome: (outcome: InvalidationOutcome) => void;
  readonly dispatcher?: Dispatcher;
  /** Tags waiting at most (default 10 000). */
  readonly maxQueued?: number;
  /** Tags in one POST at most (default 500). */
  readonly maxTagsPerPost?: number;
  /** Attempts per endpoint and batch (default 3). */
  readonly attempts?: number;
  /** The first backoff, in ms, doubled after each failed attempt (default 250). */
  readonly backoffMs?: number;
  /** How long one batch may take to reach an endpoint, attempts and backoff included, in ms (default 10 000). */
  readonly deadlineMs?: number;
}

export class InvalidationSender {
  private readonly queued = new Set<string>();
  private sending: Promise<void> | undefined;
  private readonly controller = new AbortController();
  private readonly maxQueued: number;
  private readonly maxTagsPerPost: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly deadlineMs: number;

  constructor(private readonly options: InvalidationOptions) {
    this.maxQueued = options.maxQueued ?? 10_000;
    this.maxTagsPerPost = options.maxTagsPerPost ?? 500;
    this.attempts = options.attempts ?? 3;
    this.backoffMs = options.backoffMs ?? 250;
    this.deadlineMs = options.deadlineMs ?? 10_000;
  }

  /** Tags waiting to be sent. */
  get pending(): number {
    return this.queued.size;
  }

  /** Queues `tags` for every endpoint; the batch goes out at once unless one is in flight (then with the next). */
  invalidate(tags: readonly string[]): void {
    if (this.controller.signal.aborted) return;
    for (const tag of tags) {
      if (this.queued.has(tag)) continue;
      if (this.queued.size >= this.maxQueued) {
        this.options.onOutcome('dropped');
        continue;
      }
      this.queued.add(tag);
    }
    this.sending ??= this.drain().finally(() => (this.sending = undefined));
  }

  /** Resolves once nothing is queued or in flight (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  /** Stops: the batch in flight is abandoned, the queue dropped. */
  close(): void {
    this.controller.abort();
    this.queued.clear();
  }

  private async drain(): Promise<void> {
    while (this.queued.size > 0 && !this.controller.signal.aborted) {
      const batch: string[] = [];
      for (const tag of this.queued) {
        if (batch.length >= this.maxTagsPerPost) break;
        batch.push(tag);
      }
      for (const tag of batch) this.queued.delete(tag);
      const body = JSON.stringify(batch.map((tag) => ({ kind: 'cache_tag', subgraphs: [SUBGRAPH_NAME], cache_tag: tag })));
      await Promise.all(this.options.urls.map((url) => this.post(url, body)));
    }
  }

  /** One batch to one endpoint: a few attempts with backoff, within the deadline; its outcome counted once. */
  private async post(url: string, body: string): Promise<void> {
    const deadline = AbortSignal.any([this.controller.signal, AbortSignal.timeout(this.deadlineMs)]);
    let wait = this.backoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: this.options.key },
          body,
          signal: deadline,
          ...(this.options.dispatcher && { dispatcher: this.options.dispatcher }),
        });
        await response.body.dump();
        const status = response.statusCode;
        if (status >= 200 && status < 300) return this.options.onOutcome('sent');
        if (status >= 400 && status < 500 && status !== 408 && status !== 429) return this.options.onOutcome('rejected');
      } catch {
        // A network error or the deadline: tried again below while attempts and time remain.
      }
      if (attempt >= this.attempts || deadline.aborted) return this.options.onOutcome('failed');
      const backedOff = await pause(wait * (0.5 + Math.random() / 2), deadline);
      if (!backedOff) return this.options.onOutcome('failed');
      wait *= 2;
    }
  }
}

/** Waits `ms`, or less if `signal` aborts first; whether the whole wait passed. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
