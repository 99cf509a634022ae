import type { ApolloServerPlugin } from '@apollo/server';
import { noteOperation } from './index';

/**
 * Names the request span after the GraphQL operation once Apollo Server has parsed
 * it (`query Rota`, with `graphql.operation.type` and `graphql.operation.name`).
 * A no-op when tracing is off.
 */
export function operationSpanPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, operationName }) {
          if (operation) noteOperation(operation.operation, operationName ?? undefined);
        },
      };
    },
  };
}
