import { resolveOperation } from '../../src/explorer/browser/operationName';

/**
 * The explorer's fetcher never sends an operation name the document does not define
 * (GraphiQL's tracked name lags the editor by 100 ms), and picks graphql-ws for a
 * subscription by the operation the server will run.
 */

const EXAMPLE = 'query Rota { locations { nodes { id } } }';
const SUBSCRIPTION = 'subscription { shiftChanges { kind shift { id end } } }';

describe('resolveOperation', () => {
  it('drops the example query\'s name sent with a subscription typed over it, and runs that subscription', () => {
    const params = { query: SUBSCRIPTION, operationName: 'Rota', variables: { a: 1 } };
    const resolved = resolveOperation(params);
    expect(resolved.params).toEqual({ query: SUBSCRIPTION, variables: { a: 1 } });
    expect('operationName' in resolved.params).toBe(false);
    expect(resolved.operationType).toBe('subscription');
    // The caller's object is left as GraphiQL gave it.
    expect(params.operationName).toBe('Rota');
  });

  it('drops a stale name for a named operation too', () => {
    const resolved = resolveOperation({ query: 'subscription Changes { shiftChanges { kind } }', operationName: 'Rota' });
    expect(resolved.params).toEqual({ query: 'subscription Changes { shiftChanges { kind } }' });
    expect(resolved.operationType).toBe('subscription');
  });

  it('keeps a name the document defines, and takes that operation\'s kind', () => {
    const query = `${EXAMPLE}\nsubscription Changes { shiftChanges { kind } }\nmutation Touch { touch }`;
    for (const [name, kind] of [['Rota', 'query'], ['Changes', 'subscription'], ['Touch', 'mutation']] as const) {
      const params = { query, operationName: name };
      const resolved = resolveOperation(params);
      expect(resolved.params).toBe(params);
      expect(resolved.operationType).toBe(kind);
    }
  });

  it('keeps the name of a one-operation document that defines it (the introspection answer is filtered by it)', () => {
    const params = { query: 'query ExplorerSchema { __schema { queryType { name } } }', operationName: 'ExplorerSchema' };
    expect(resolveOperation(params)).toEqual({ params, operationType: 'query' });
  });

  it('drops a name that none of several operations carries, and chooses none of them (the server asks which)', () => {
    const query = `${EXAMPLE}\nsubscription Changes { shiftChanges { kind } }`;
    const resolved = resolveOperation({ query, operationName: 'Gone' });
    expect(resolved.params).toEqual({ query });
    expect(resolved.operationType).toBeUndefined();
  });

  it('leaves a request with no name as it is, and drops an empty one (no operation is named "")', () => {
    for (const operationName of [undefined, null]) {
      const params = { query: SUBSCRIPTION, operationName };
      const resolved = resolveOperation(params);
      expect(resolved.params).toBe(params);
      expect(resolved.operationType).toBe('subscription');
    }
    expect(resolveOperation({ query: SUBSCRIPTION, operationName: '' })).toEqual({ params: { query: SUBSCRIPTION }, operationType: 'subscription' });
    const bare = { query: '{ locations { nodes { id } } }' };
    expect(resolveOperation(bare)).toEqual({ params: bare, operationType: 'query' });
  });

  it('sends a document that does not parse as it is, for the server\'s parse error', () => {
    const params = { query: 'subscription { shiftChanges { kind ', operationName: 'Rota' };
    expect(resolveOperation(params)).toEqual({ params });
  });

  it('drops a name sent with a document of fragments only (no operation carries it)', () => {
    const resolved = resolveOperation({ query: 'fragment F on Shift { id }', operationName: 'Rota' });
    expect(resolved.params).toEqual({ query: 'fragment F on Shift { id }' });
    expect(resolved.operationType).toBeUndefined();
  });
});
