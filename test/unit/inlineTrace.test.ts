import type { GraphQLRequestContext } from '@apollo/server';
import { Trace } from '@apollo/usage-reporting-protobuf';
import { buildSchema, GraphQLObjectType } from 'graphql';
import { inlineTrace, TRACE_HEADER } from '../../src/graphql/inlineTrace';
import { TRACER } from '../../src/graphql/inlineTraceResolvers';
import * as encoder from '../../src/graphql/inlineTraceEncoder';
import { encodeTrace, FieldShape, TraceTree } from '../../src/graphql/inlineTraceEncoder';

/** The plugin's cheap path (no header, no trace) and the encoder against protobufjs, one module each. */

const schema = buildSchema('type Query { hello: String, list: [Item!]! } type Item { id: ID! }');
const resolvers = () => Object.values((schema.getType('Item') as GraphQLObjectType).getFields()).map((field) => field.resolve);

function requestContext(headers: Record<string, string>, metrics: { captureTraces?: boolean } = {}) {
  return {
    request: { http: { headers: new Map(Object.entries(headers)), method: 'POST', search: '', body: {} } },
    metrics,
    schema,
    contextValue: {},
  } as unknown as GraphQLRequestContext<object>;
}

describe('inlineTrace plugin', () => {
  it('does nothing for a request without the header: no hooks, context and schema untouched', async () => {
    const context = requestContext({});
    await expect(inlineTrace().requestDidStart!(context)).resolves.toBeUndefined();
    expect(Object.getOwnPropertySymbols(context.contextValue)).toEqual([]);
    expect(context.metrics.captureTraces).toBeUndefined();
    expect(resolvers()).toEqual([undefined]);
  });

  it('leaves a request alone that another plugin decided not to trace', async () => {
    const context = requestContext({ [TRACE_HEADER]: 'ftv1' }, { captureTraces: false });
    await expect(inlineTrace().requestDidStart!(context)).resolves.toBeUndefined();
    expect(resolvers()).toEqual([undefined]);
  });

  it('traces a request with the header: captureTraces set, the tracer in the context, resolvers wrapped', async () => {
    const context = requestContext({ [TRACE_HEADER]: 'ftv1' });
    await expect(inlineTrace().requestDidStart!(context)).resolves.toBeDefined();
    expect(context.metrics.captureTraces).toBe(true);
    expect((context.contextValue as Record<symbol, unknown>)[TRACER]).toBeDefined();
    expect(resolvers()).toEqual([expect.any(Function)]);
  });

  it('answers without a trace, and logs why, when the trace cannot be encoded', async () => {
    const context = requestContext({ [TRACE_HEADER]: 'ftv1' });
    const hooks = await inlineTrace().requestDidStart!(context);
    const encode = jest.spyOn(encoder, 'encodeTrace').mockImplementation(() => {
      throw new RangeError('offset out of range');
    });
    const errors: string[] = [];
    const response = { body: { kind: 'single', singleResult: { data: { hello: 'world' } } } };
    try {
      await hooks!.willSendResponse!({ ...context, response, logger: { error: (message: string) => errors.push(message) } } as never);
    } finally {
      encode.mockRestore();
    }
    expect(response.body.singleResult).toEqual({ data: { hello: 'world' }, extensions: {} });
    expect(errors).toEqual([expect.stringContaining('offset out of range')]);
  });
});

describe('encodeTrace', () => {
  it('writes what protobufjs writes for the same trace, large numbers and UTF-8 included', () => {
    const tree = new TraceTree();
    const shape = new FieldShape('café', '[Item!]!', 'Query', 'list');
    const list = tree.add(0, 'café', shape);
    tree.starts[list] = 5;
    tree.ends[list] = 2 ** 40 + 3;
    const item = tree.add(list, 300, undefined);
    const named = tree.add(item, 'missing', undefined);
    tree.addError(named, { message: 'boom ✗', locations: [{ line: 1, column: 200 }], json: '{"message":"boom ✗"}' });
    tree.addError(0, { message: 'root', locations: [], json: '{}' });
    const bytes = encodeTrace(tree, { startMs: 1_700_000_000_123, endMs: 1_700_000_001_000, durationNs: 877_000_000 });

    const expected = Trace.encode(
      new Trace({
        endTime: { seconds: 1_700_000_001, nanos: 0 },
        startTime: { seconds: 1_700_000_000, nanos: 123_000_000 },
        durationNs: 877_000_000,
        root: new Trace.Node({
          error: [new Trace.Error({ message: 'root', location: [], json: '{}' })],
          child: [
            new Trace.Node({
              responseName: 'café',
              type: '[Item!]!',
              startTime: 5,
              endTime: 2 ** 40 + 3,
              parentType: 'Query',
              originalFieldName: 'list',
              child: [
                new Trace.Node({
                  index: 300,
                  child: [
                    new Trace.Node({
                      responseName: 'missing',
                      error: [new Trace.Error({ message: 'boom ✗', location: [new Trace.Location({ line: 1, column: 200 })], json: '{"message":"boom ✗"}' })],
                    }),
                  ],
                }),
              ],
            }),
          ],
        }),
        fieldExecutionWeight: 1,
      }),
    ).finish();
    expect(Buffer.from(expected).toString('hex')).toBe(bytes.toString('hex'));
  });

  it('stays within its size bound for a wide tree with the largest times', () => {
    const tree = new TraceTree();
    const shape = new FieldShape('items', '[Item!]!', 'Query', undefined);
    const itemId = new FieldShape('id', 'ID!', 'Item', undefined);
    const list = tree.add(0, 'items', shape);
    for (let i = 0; i < 2000; i++) {
      const field = tree.add(tree.add(list, i, undefined), 'id', itemId);
      tree.starts[field] = Number.MAX_SAFE_INTEGER - 1;
      tree.ends[field] = Number.MAX_SAFE_INTEGER;
    }
    const bytes = encodeTrace(tree, { startMs: 1_700_000_000_000, endMs: 1_700_000_000_001, durationNs: Number.MAX_SAFE_INTEGER });
    const decoded = Trace.decode(bytes);
    expect(decoded.root?.child?.[0]?.child).toHaveLength(2000);
    expect(Number(decoded.root?.child?.[0]?.child?.[1999]?.child?.[0]?.endTime)).toBe(Number.MAX_SAFE_INTEGER);
    expect(Buffer.from(Trace.encode(decoded).finish()).equals(bytes)).toBe(true);
  });
});
