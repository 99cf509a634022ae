import type { ApolloServerPlugin } from '@apollo/server';
import type { Tracing } from './tracing';

/**
 * Names the request span after the GraphQL operation once Apollo Server has parsed
 * it (`query Rota`, with `graphql.operation.type` and `graphql.operation.name`).
 * Installed only when tracing is on.
 */
export function operationSpanPlugin(tracing: Tracing): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, operationName }) {
          if (operation) nameOperationSpan(tracing, operation.operation, operationName ?? null);
        },
      };
    },
  };
}

/**
 * Names the active request span after its operation. A query answered whole from memory
 * (cache/answers.ts) never reaches Apollo Server's hooks: the handler names its span
 * here too, under the operation name the answer resolved to, marked `wfs.whole_answer`.
 */
export function nameOperationSpan(tracing: Tracing, type: string, operationName: string | null, whole = false): void {
  tracing.rename(operationName ? `${type} ${operationName}` : type);
  tracing.annotate({ 'graphql.operation.type': type, 'graphql.operation.name': operationName ?? '', ...(whole && { 'wfs.whole_answer': true }) });
}
