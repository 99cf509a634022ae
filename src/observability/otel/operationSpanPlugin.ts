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
          if (!operation) return;
          const type = operation.operation;
          tracing.rename(operationName ? `${type} ${operationName}` : type);
          tracing.annotate({ 'graphql.operation.type': type, 'graphql.operation.name': operationName ?? '' });
        },
      };
    },
  };
}
