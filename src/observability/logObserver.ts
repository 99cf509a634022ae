import type { Observer } from '../upstream/observer';
import type { Logger } from './logger';

/**
 * The log lines of the events: token requests (a configuration error with the
 * operator's hint, or a failure) and breaker transitions. The failure line of an
 * upstream call is written by upstreamObserver.ts, rate-limited per shard.
 */
export function logObserver(logger: Logger, tokenUrl: string): Partial<Observer> {
  return {
    tokenRequestEnded(tenantId, outcome, error) {
      if (outcome === 'ok') logger.debug({ tenantId }, 'token obtained');
      else if (outcome === 'UPSTREAM_MISCONFIGURED' || outcome === 'UPSTREAM_UNAUTHORIZED') {
        // The operator's hint lives here, not in the error API clients see.
        logger.error(
          { tenantId, code: outcome, reason: error?.message, tokenUrl },
          'configuration error: the token for this tenant was refused or is unusable; check its entry in WFS_TENANTS_FILE and WFS_API_BASE_ALLOW',
        );
      } else logger.warn({ tenantId, code: outcome, reason: error?.message, tokenUrl }, 'token request failed');
    },
    breakerTransition(origin, state) {
      if (state === 'open') logger.warn({ origin }, 'upstream shard failing: circuit breaker open, its calls fail fast for a while');
      else if (state === 'closed') logger.info({ origin }, 'upstream shard answering again: circuit breaker closed');
    },
  };
}
