import type { ApolloServerPlugin } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { isUpstreamError } from '../upstream/errors';
import { BoundedLabel } from './boundedLabel';
import type { RequestRecord } from '../upstream/observer';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { cacheHitsOf } from './requestScope';
import type { UpstreamObserver } from './upstreamObserver';

/** Operation names kept as label values; the rest are `other` (operation names come from clients). */
const MAX_OPERATION_NAMES = 20;
/** Requests a name needs before it takes a slot: an application's operations keep arriving, junk names mostly do not. */
const OPERATION_NAME_ADMIT_AFTER = 3;

/**
 * RED metrics per operation, the error codes sent, and the per-request debug line.
 * A request whose client went away is counted as aborted: its errors were never
 * sent, so they count neither as GraphQL errors nor (upstreamObserver) as upstream
 * failures. Must come after the plugin that appends the item errors.
 */
export function operationObserver(metrics: Metrics, logger: Logger, upstream: Pick<UpstreamObserver, 'logFailure'>): ApolloServerPlugin<{ request?: RequestRecord }> {
  return operationRecorder(metrics, logger, upstream).plugin;
}

/** `operationObserver`'s plugin, and the same record for an answer served whole before Apollo Server runs (cache/answers.ts). */
export interface OperationRecorder {
  readonly plugin: ApolloServerPlugin<{ request?: RequestRecord }>;
  /**
   * A query answered whole from memory (no error, no execution): counted and logged as
   * the request that made the answer was, under the operation name it resolved to, the
   * debug line saying `wholeAnswer: true`.
   */
  answeredWhole(record: RequestRecord | undefined, operationName: string | null): void;
}

export function operationRecorder(metrics: Metrics, logger: Logger, upstream: Pick<UpstreamObserver, 'logFailure'>): OperationRecorder {
  const names = new BoundedLabel(MAX_OPERATION_NAMES, /^[_A-Za-z][_0-9A-Za-z]{0,99}$/, { admitAfter: OPERATION_NAME_ADMIT_AFTER });
  type Hooks = Awaited<ReturnType<NonNullable<ApolloServerPlugin<{ request?: RequestRecord }>['requestDidStart']>>>;

  /** One request's counts and debug line; `operation` false: it never resolved to one (parsing or validation failed). */
  const observe = (operation: boolean, operationType: string, name: string | null | undefined, codes: readonly string[], scope: RequestRecord | undefined, started: number | undefined, whole: boolean) => {
    // Counted once the operation resolved (parsing and validation passed), as a label of at most MAX_OPERATION_NAMES values.
    const operationName = operation ? names.value(name ?? undefined, 'anonymous') : 'none';
    if (operation) metrics.graphqlRequests.inc({ operation_type: operationType, operation_name: operationName });
    const aborted = scope?.aborted === true;
    if (aborted) metrics.graphqlAborted.inc({ operation_type: operationType });
    else for (const code of codes) metrics.graphqlErrors.inc({ code });
    const seconds = (performance.now() - (scope?.startedAt ?? started ?? performance.now())) / 1000;
    const outcome = aborted ? 'aborted' : codes.length > 0 ? 'error' : 'ok';
    metrics.graphqlDuration.observe({ operation_type: operationType, operation_name: operationName, outcome }, seconds);
    if (logger.isLevelEnabled('debug')) {
      logger.debug(
        {
          event: 'graphql_request',
          operationName: operation ? (name?.slice(0, 100) ?? null) : null,
          operationType,
          tenantId: scope?.tenantId,
          durationMs: Math.round(seconds * 1000),
          upstreamCalls: scope?.upstreamCalls ?? 0,
          coalesced: scope?.coalesced ?? 0,
          cacheHits: scope ? cacheHitsOf(scope) : 0,
          errorCodes: codes,
          aborted,
          ...(whole && { wholeAnswer: true }),
        },
        'graphql request',
      );
    }
  };

  /**
   * The hooks, for requests that started at `started` (ms; undefined: the request's record
   * says when). Everything else is read from the request's context when the response
   * goes out, so a request with a record shares one set of hooks: no closures per request
   * held through its upstream wait.
   */
  const hooksFor = (started: number | undefined): Hooks => ({
    async didEncounterErrors({ errors }) {
      for (const error of errors) {
        const original = unwrapResolverError(error);
        if (isUpstreamError(original)) upstream.logFailure(original, error.path ? { path: error.path.join('.') } : {});
      }
    },
    async willSendResponse({ response, contextValue, operation, operationName: name }) {
      const errors = response.body.kind === 'single' ? (response.body.singleResult.errors ?? []) : [];
      const codes = errors.map((error) => String(error.extensions?.code ?? 'UNKNOWN'));
      // The request's record rides on its GraphQL context (http/graphqlHandler.ts puts it there).
      observe(operation !== undefined, operation?.operation ?? 'unknown', name, codes, contextValue.request, started, false);
    },
  });
  const shared = hooksFor(undefined);
  return {
    plugin: {
      async requestDidStart({ contextValue }) {
        return contextValue.request ? shared : hooksFor(performance.now());
      },
    },
    answeredWhole: (record, operationName) => observe(true, 'query', operationName, [], record, undefined, true),
  };
}
