import { Kind, parse, type OperationTypeNode } from 'graphql';

/** What GraphiQL hands the fetcher: the editor's document and the operation name it tracks. */
export interface OperationRequest {
  query: string;
  operationName?: string | null;
}

export interface ResolvedRequest<P extends OperationRequest> {
  /** The request to send: `params` itself, or a copy without an operation name the document does not define. */
  readonly params: P;
  /**
   * The kind of the operation the server will run: the named one, else the document's
   * only one. Undefined when the document does not parse, defines no operation, or
   * defines several and names none (the server's own error then says what is wrong).
   */
  readonly operationType?: OperationTypeNode;
}

/**
 * GraphiQL reads the document from the editor when Execute is pressed, but the
 * operation name it tracks is derived from the text 100 ms after the last edit. A
 * document pasted over the example query and run at once goes out with the example's
 * name (`Rota`), and the server refuses it: `Unknown operation named "Rota".`
 * (OPERATION_RESOLUTION_FAILURE). So the name is checked against the document being
 * sent: a name that none of its operations carries is stale and dropped. A document of
 * one operation then runs that operation; one of several then gets the server's error
 * asking which to run, as it would with no name. A name the document defines is kept,
 * and a document that does not parse is sent as it is, for the server's parse error.
 */
export function resolveOperation<P extends OperationRequest>(params: P): ResolvedRequest<P> {
  let definitions;
  try {
    ({ definitions } = parse(params.query, { noLocation: true }));
  } catch {
    return { params };
  }
  const operations = definitions.flatMap((definition) => (definition.kind === Kind.OPERATION_DEFINITION ? [definition] : []));
  const name = params.operationName;
  const named = name ? operations.find((operation) => operation.name?.value === name) : undefined;
  if (named) return { params, operationType: named.operation };
  const sent: P = name == null ? params : withoutOperationName(params);
  const only = operations.length === 1 ? operations[0] : undefined;
  return only ? { params: sent, operationType: only.operation } : { params: sent };
}

function withoutOperationName<P extends OperationRequest>(params: P): P {
  const { operationName: _stale, ...rest } = params;
  return rest as P;
}
