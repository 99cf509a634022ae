/**
 * The cache as one room (docs/caching.md): the policy that decides, per answer, what
 * may be done with it (policy.ts), the store of answers kept whole that carries that
 * decision out before and after Apollo Server runs (answers.ts, with a window above 0
 * only), the tags gateways file answers under (tags.ts), and what a change does to
 * all of it (invalidation.ts). Wired once here; server.ts hands the pieces to the HTTP
 * handler, to Apollo Server (the policy's plugin) and to live updates (`changed`).
 */
import type { Config } from '../config';
import type { DemoDefault, IdentityResolver } from '../graphql/admission/identity';
import type { Observer } from '../upstream/observer';
import type { MemoryBudget } from '../memory/budget';
import type { ResourceSet } from '../upstream/resources';
import { WholeAnswers } from './answers';
import { cacheBudget } from './budget';
import { InvalidationSender, type InvalidationOutcome } from './invalidation';
import { CachePolicy } from './policy';
import { CacheTags } from './tags';

export { CachePolicy } from './policy';
export { WholeAnswers } from './answers';

export interface Cache {
  readonly policy: CachePolicy;
  /** Answers kept whole; undefined at a window of 0. */
  readonly whole: WholeAnswers | undefined;
  /**
   * A change a live poll saw (`polled`: by this replica's own walk) or heard (the Redis
   * change message): the company's index of the list lets go of what it held, which
   * ends every kept page and answer read from it, and, for a change this replica saw,
   * the gateways are told to drop the list's tag.
   */
  changed(tenantId: string, list: string, polled: boolean): void;
  close(): void;
}

export interface CacheParts {
  readonly config: Pick<Config, 'freshnessSeconds' | 'cursorSecret' | 'cacheInvalidationUrls' | 'cacheInvalidationKey'>;
  readonly demo?: DemoDefault | undefined;
  /** Identity (identity.ts): the headers it reads are what decides whose an answer is (`Vary`). */
  readonly identify: Pick<IdentityResolver, 'reads'>;
  /** The entity indexes (built by the wiring): their clock, and the list whose kept pages a change ends. */
  readonly indexes: { readonly now: () => number; changed(tenantId: string, list: string): void };
  /** The replica's memory budget (memory/budget.ts) answers kept whole are charged to. */
  readonly budget: MemoryBudget;
  readonly resources: ResourceSet;
  readonly observer: Pick<Observer, 'cacheLookup'>;
  /** Counts what became of an invalidation (`wfs_cache_invalidations_total`). */
  readonly onInvalidation: (outcome: InvalidationOutcome) => void;
}

export function createCache(parts: CacheParts): Cache {
  const { config, demo, indexes, resources, observer } = parts;
  const tags = new CacheTags(config.cursorSecret);
  const policy = new CachePolicy({
    freshnessSeconds: config.freshnessSeconds,
    tags,
    resources,
    identityHeaders: parts.identify.reads ?? [],
    demo,
    now: indexes.now,
  });
  const whole = config.freshnessSeconds > 0 ? new WholeAnswers({ freshnessSeconds: config.freshnessSeconds, now: indexes.now, budget: cacheBudget(parts.budget), observer }) : undefined;
  // Invalidation out: the gateways hear of the changes this replica's polls see.
  const invalidation =
    config.cacheInvalidationUrls.length > 0 ? new InvalidationSender({ urls: config.cacheInvalidationUrls, key: config.cacheInvalidationKey ?? '', onOutcome: parts.onInvalidation }) : undefined;
  return {
    policy,
    whole,
    changed(tenantId, list, polled) {
      indexes.changed(tenantId, list);
      if (polled) invalidation?.invalidate([tags.list(tenantId, list)]);
    },
    close() {
      invalidation?.close();
      whole?.close();
    },
  };
}
