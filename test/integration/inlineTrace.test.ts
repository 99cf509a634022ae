import { Trace } from '@apollo/usage-reporting-protobuf';
import { COMPILE_AFTER } from '../../src/graphql/server/execution';
import { TRACE_HEADER } from '../../src/observability/inlineTrace';
import { as, testTenant } from '../helpers/fixtures';
import { postGraphQL, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * The federated trace (`ftv1`) the subgraph answers when the router asks for it, over
 * real HTTP: Apollo's `Trace` with every resolved field (names, aliases, types, list
 * items, times) and errors masked as Apollo masks them; none without the header.
 */

const A = testTenant('a', { secret: 'secret-a-3c9e1f7a', scopes: ['shifts.read'], locations: 12, shifts: 20 });
const NO_SHIFTS = testTenant('c', { secret: 'secret-c-8d2b6e4f', scopes: [], locations: 3, shifts: 5 });
const TRACED = { [TRACE_HEADER]: 'ftv1' };

type TraceNode = ReturnType<typeof Trace.Node.toObject> & { child?: TraceNode[] };

function decode(base64: unknown): Trace {
  expect(typeof base64).toBe('string');
  return Trace.decode(Buffer.from(base64 as string, 'base64'));
}

/**
 * The trace's start and end lie within `sent` (epoch ms, whole milliseconds around the
 * request), and every field node's times: start <= end <= duration, and no child
 * starting before its (timed) ancestor.
 */
function expectSaneTimes(trace: Trace, sent: { from: number; to: number }): number {
  const duration = Number(trace.durationNs);
  expect(duration).toBeGreaterThan(0);
  const start = Number(trace.startTime!.seconds) * 1000 + trace.startTime!.nanos! / 1e6;
  const end = Number(trace.endTime!.seconds) * 1000 + trace.endTime!.nanos! / 1e6;
  expect(start).toBeLessThanOrEqual(end);
  expect(start).toBeGreaterThanOrEqual(sent.from - 1);
  expect(end).toBeLessThanOrEqual(sent.to + 1);
  let timed = 0;
  const visit = (node: Trace.INode, ancestorStart: number): void => {
    let from = ancestorStart;
    if (node.type) {
      const nodeStart = Number(node.startTime);
      const nodeEnd = Number(node.endTime);
      expect(nodeStart).toBeGreaterThanOrEqual(ancestorStart);
      expect(nodeStart).toBeLessThanOrEqual(nodeEnd);
      expect(nodeEnd).toBeLessThanOrEqual(duration);
      from = nodeStart;
      timed++;
    }
    for (const child of node.child ?? []) visit(child, from);
  };
  visit(trace.root!, 0);
  return timed;
}

/** The trace of one request, decoded, with its times checked. */
async function traced(query: string, variables?: Record<string, unknown>, headers: Record<string, string> = as(A)) {
  const sent = { from: Date.now(), to: 0 };
  const response = await postGraphQL(subgraph.server.url, { query, variables }, { ...headers, ...TRACED });
  sent.to = Date.now();
  const extensions = (response as { extensions?: Record<string, unknown> }).extensions ?? {};
  const trace = decode(extensions['ftv1']);
  const root = (Trace.toObject(trace, { longs: Number }) as { root: TraceNode }).root;
  const timedFields = expectSaneTimes(trace, sent);
  return { response, trace, root, timedFields };
}

const child = (node: TraceNode, key: string | number): TraceNode => {
  const found = node.child?.find((c) => (typeof key === 'number' ? c.index === key && !c.responseName : c.responseName === key));
  if (!found) throw new Error(`no child ${key} in ${JSON.stringify(node.child?.map((c) => c.responseName ?? c.index))}`);
  return found;
};

let subgraph: TestSubgraph;

beforeAll(async () => {
  subgraph = await startTestSubgraph({ tenants: [A, NO_SHIFTS] });
});

afterAll(async () => {
  await subgraph?.close();
});

describe('inline trace (ftv1) with the router header', () => {
  it('records every field of a list with aliases and __typename', async () => {
    const { response, root, timedFields } = await traced('{ places: locations(first: 5) { __typename nodes { id label: name __typename } pageInfo { hasNextPage } } }');
    expect(response.data.places.nodes).toHaveLength(5);
    const places = child(root, 'places');
    expect(places).toMatchObject({ type: 'LocationConnection', parentType: 'Query', originalFieldName: 'locations' });
    const item = child(child(places, 'nodes'), 4);
    expect(item.child?.map((c) => c.responseName)).toEqual(['id', 'label']);
    expect(child(item, 'label')).toMatchObject({ type: 'String!', parentType: 'Location', originalFieldName: 'name' });
    // places, nodes, pageInfo, hasNextPage, 5 x (id, label): __typename is no resolver call.
    expect(timedFields).toBe(4 + 5 * 2);
  });

  it('records nested shifts with their locations', async () => {
    // `end` after `location`: the item's next field comes after the nested ones (its parent is found again by path).
    const { response, root } = await traced('{ shifts(first: 4) { nodes { id location { id name } end } } }');
    expect(response.data.shifts.nodes).toHaveLength(4);
    const location = child(child(child(child(root, 'shifts'), 'nodes'), 3), 'location');
    expect(location).toMatchObject({ type: 'Location', parentType: 'Shift' });
    expect(child(child(child(child(root, 'shifts'), 'nodes'), 3), 'end')).toMatchObject({ type: 'DateTime', parentType: 'Shift' });
    expect(child(location, 'name')).toMatchObject({ type: 'String!', parentType: 'Location' });
  });

  it('records _entities items under the abstract _Entity list', async () => {
    const representations = [
      { __typename: 'Location', id: A.locations[0]!.id },
      { __typename: 'Location', id: 'no-such-location' },
      { __typename: 'Shift', id: A.shifts[1]!.id },
    ];
    const { response, root } = await traced(
      'query ($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Location { id name } ... on Shift { id end } } }',
      { r: representations },
    );
    expect(response.data._entities[1]).toBeNull();
    const entities = child(root, '_entities');
    expect(entities).toMatchObject({ type: '[_Entity]!', parentType: 'Query' });
    expect(child(child(entities, 2), 'end')).toMatchObject({ type: 'DateTime', parentType: 'Shift' });
  });

  it('masks a field error at its path', async () => {
    const { response, root } = await traced('{ locations(first: 2) { nodes { id } } shifts(first: 2) { nodes { id } } }', undefined, as(NO_SHIFTS));
    expect(response.errors?.[0]?.path).toEqual(['shifts']);
    const [error] = child(root, 'shifts').error ?? [];
    expect(error?.message).toBe('<masked>');
    expect(JSON.parse(error!.json!)).toEqual({
      message: '<masked>',
      locations: [{ line: 1, column: 40 }],
      path: ['shifts'],
      extensions: { maskedBy: 'ApolloServerPluginInlineTrace' },
    });
  });

  it('records fields reached through named and inline fragments', async () => {
    const { root } = await traced(
      'query Frag { locations(first: 2) { ...Page } } fragment Page on LocationConnection { nodes { ... on Location { id } ...Named } } fragment Named on Location { name }',
    );
    expect(child(child(child(child(root, 'locations'), 'nodes'), 1), 'name')).toMatchObject({ type: 'String!' });
  });

  it('answers a validation error with a trace whose root carries the masked error', async () => {
    const { response, root } = await traced('{ locations(first: 1) { nodes { noSuchField } } }');
    expect(response.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(root.child ?? []).toEqual([]);
    expect(root.error?.map((e: { message: string }) => e.message)).toEqual(['<masked>']);
  });

  it('answers a syntax error with a trace too', async () => {
    const { response, root } = await traced('{ locations(first: 1) { nodes { id } }');
    expect(response.errors?.[0]?.extensions?.code).toBe('GRAPHQL_PARSE_FAILED');
    expect(root.error).toHaveLength(1);
  });
});

describe('a document run often enough to be compiled (src/graphql/server/execution.ts)', () => {
  it('is still traced field by field when the router asks, and answers the same before, then and after', async () => {
    const query = '{ locations(first: 3) { nodes { id name } pageInfo { hasNextPage } } }';
    const plain = [];
    for (let i = 0; i <= COMPILE_AFTER + 1; i++) plain.push(await postGraphQL(subgraph.server.url, { query }, as(A)));
    const { response, root, timedFields } = await traced(query);
    for (const answer of plain) expect(answer.data).toEqual(plain[0]!.data);
    expect(response.data).toEqual(plain[0]!.data);
    // locations, nodes, pageInfo, hasNextPage, 3 x (id, name).
    expect(timedFields).toBe(4 + 3 * 2);
    expect(child(child(child(child(root, 'locations'), 'nodes'), 2), 'name')).toMatchObject({ type: 'String!', parentType: 'Location' });
    const after = await postGraphQL(subgraph.server.url, { query }, as(A));
    expect(after.data).toEqual(plain[0]!.data);
    expect((after as { extensions?: Record<string, unknown> }).extensions?.['ftv1']).toBeUndefined();
  });
});

describe('without the router header', () => {
  it('answers without extensions.ftv1', async () => {
    const response = await postGraphQL(subgraph.server.url, { query: '{ locations(first: 2) { nodes { id } } }' }, as(A));
    expect(response.data.locations.nodes).toHaveLength(2);
    expect((response as { extensions?: Record<string, unknown> }).extensions?.['ftv1']).toBeUndefined();
  });

  it('answers without extensions.ftv1 for another header value', async () => {
    const response = await postGraphQL(subgraph.server.url, { query: '{ locations(first: 2) { nodes { id } } }' }, { ...as(A), [TRACE_HEADER]: 'ftv2' });
    expect(response.data.locations.nodes).toHaveLength(2);
    expect((response as { extensions?: Record<string, unknown> }).extensions?.['ftv1']).toBeUndefined();
  });
});
