import { ApolloServer, type ApolloServerPlugin, type BaseContext } from '@apollo/server';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { GraphQLError, Kind, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { gql } from 'graphql-tag';
import { createErrorFormatter } from '../../src/graphql/errors';
import { COMPILE_AFTER, CompiledExecution, MAX_COMPILED, MAX_COMPILED_FIELDS } from '../../src/graphql/server/execution';
import { selectedFields } from '../../src/graphql/admission/limits';
import { builtInPluginsOff } from '../../src/graphql/server/plugins';
import { UpstreamError } from '../../src/upstream/errors';

/**
 * Compiled execution under a real Apollo Server (src/graphql/server/execution.ts): an
 * operation runs through graphql-js until it is seen again, then as a graphql-jit
 * query, and the answers (data, errors with their codes, paths and locations) stay
 * graphql-js's, word for word.
 */

const typeDefs = gql`
  type Query {
    items(n: Int!, prefix: String = "item"): [Item!]!
    item(id: ID!): Item
  }
  type Item @key(fields: "id") {
    id: ID!
    name: String!
    failing: String
    refused: String
    unavailable: String
    missing: String!
    count: Int
  }
`;

type Item = { id: string };
const resolvers = {
  Query: {
    items: async (_: unknown, { n, prefix }: { n: number; prefix: string }) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}` })),
    item: (_: unknown, { id }: { id: string }) => {
      if (id === 'boom') throw new GraphQLError('no such item here', { extensions: { code: 'BAD_USER_INPUT' } });
      return id === 'none' ? null : { id };
    },
  },
  Item: {
    __resolveReference: ({ id }: Item) => ({ id }),
    name: ({ id }: Item) => `name of ${id}`,
    failing: () => {
      throw new Error('a bug with a secret in it');
    },
    refused: () => {
      throw new GraphQLError('not for you', { extensions: { code: 'BAD_USER_INPUT' } });
    },
    unavailable: async () => {
      throw new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream answered 503 for items');
    },
    missing: () => null,
    count: () => 'many',
  },
};

const build = (): GraphQLSchema => buildSubgraphSchema([{ typeDefs, resolvers: resolvers as never }]);

/** Counts the field hooks of the requests that ask for them (`extensions.watch`), as Apollo's inline trace does. */
let watchedFields = 0;
const watching: ApolloServerPlugin<BaseContext> = {
  async requestDidStart({ request }) {
    if (!request.extensions?.['watch']) return;
    return {
      async executionDidStart() {
        return { willResolveField: () => void watchedFields++ };
      },
    };
  },
};

let builds = 0;
let execution: CompiledExecution;
let apollo: ApolloServer;

beforeEach(async () => {
  builds = 0;
  watchedFields = 0;
  execution = new CompiledExecution(build(), () => {
    builds++;
    return build();
  });
  apollo = new ApolloServer({ gateway: execution, plugins: [watching, ...builtInPluginsOff()], formatError: createErrorFormatter(() => undefined) });
  await apollo.start();
});

afterEach(async () => {
  await apollo.stop();
});

async function run(query: string, variables?: Record<string, unknown>, extensions?: Record<string, unknown>) {
  const response = await apollo.executeOperation({ query, ...(variables && { variables }), ...(extensions && { extensions }) });
  if (response.body.kind !== 'single') throw new Error('expected a single result');
  return { status: response.http.status, ...response.body.singleResult };
}

/** Runs `query` until it has been compiled and once more, and answers every answer. */
async function runsUntilCompiled(query: string, variables?: Record<string, unknown>) {
  const answers = [];
  for (let i = 0; i <= COMPILE_AFTER + 1; i++) answers.push(await run(query, variables));
  return answers;
}

const EVERYTHING = `query Everything($n: Int!) {
  items(n: $n) { id name failing refused unavailable }
  nothing: item(id: "none") { id }
  one: item(id: "x") { id name missing }
  two: item(id: "y") { id count }
}`;

/** An operation that answers no errors: compiled from its tenth run. */
const FINE = `query Fine($n: Int!) {
  items(n: $n) { id name }
  nothing: item(id: "none") { id }
  one: item(id: "x") { id name }
}`;

describe('compiled execution', () => {
  it('answers an operation whose compiled run answers errors by graphql-js: data, errors, codes, paths and locations are graphql-js own', async () => {
    const answers = await runsUntilCompiled(EVERYTHING, { n: 2 });
    // Compiled at the tenth run, which answered errors: graphql-js answered it again, and counts it anew.
    expect(execution.compiledRuns).toBe(0);
    expect(execution.compiled).toBe(0);
    expect(builds).toBe(1);
    const first = answers[0]!;
    expect(first.data?.['items']).toHaveLength(2);
    expect(first.errors?.map((e) => e.extensions?.['code']).sort()).toEqual(
      ['BAD_USER_INPUT', 'BAD_USER_INPUT', 'INTERNAL_SERVER_ERROR', 'INTERNAL_SERVER_ERROR', 'INTERNAL_SERVER_ERROR', 'INTERNAL_SERVER_ERROR', 'UPSTREAM_UNAVAILABLE', 'UPSTREAM_UNAVAILABLE'].sort(),
    );
    expect(first.errors?.every((e) => e.path)).toBe(true);
    // Masked errors (ours: a bug's message never reaches a client) carry no locations; the others do.
    expect(first.errors?.filter((e) => e.extensions?.['code'] !== 'INTERNAL_SERVER_ERROR').every((e) => e.locations)).toBe(true);
    for (const later of answers.slice(1)) {
      expect(later.data).toEqual(first.data);
      expect(later.errors).toEqual(first.errors);
      expect(later.status).toEqual(first.status);
    }
  });

  it('answers compiled only without errors; after a compiled run with errors, it compiles again after COMPILE_AFTER more runs', async () => {
    const query = 'query One($id: ID!) { item(id: $id) { id name } nothing: item(id: "none") { id } }';
    const answers = await runsUntilCompiled(query, { id: 'a' });
    expect(execution.compiledRuns).toBe(2);
    expect(answers.map((answer) => answer.data)).toEqual(answers.map(() => ({ item: { id: 'a', name: 'name of a' }, nothing: null })));
    const failed = await run(query, { id: 'boom' });
    expect(failed.errors?.map((e) => [e.message, e.path, e.extensions?.['code']])).toEqual([['no such item here', ['item'], 'BAD_USER_INPUT']]);
    expect(failed.data).toEqual({ item: null, nothing: null });
    expect(execution.compiled).toBe(0);
    for (let i = 0; i < COMPILE_AFTER; i++) await run(query, { id: 'b' });
    expect(execution.compiledRuns).toBe(2);
    const again = await run(query, { id: 'c' });
    expect(again.data).toEqual({ item: { id: 'c', name: 'name of c' }, nothing: null });
    expect(execution.compiledRuns).toBe(3);
    // The same compiled query: nothing was compiled anew.
    expect(execution.compiled).toBe(1);
    expect(builds).toBe(1);
  });

  it('never compiles an operation with a directive or a response key selected twice with a selection, and answers it as graphql-js does', async () => {
    const queries = [
      'query S($show: Boolean!) { x: item(id: "a") { id ...F @include(if: $show) } y: item(id: "b") { id ...F } } fragment F on Item { name }',
      '{ a: items(n: 2) @skip(if: true) { id name } a: items(n: 2) { id } }',
      '{ a: items(n: 1) { id } a: items(n: 1) { name } }',
    ];
    const expected = [{ x: { id: 'a' }, y: { id: 'b', name: 'name of b' } }, { a: [{ id: 'item-0' }, { id: 'item-1' }] }, { a: [{ id: 'item-0', name: 'name of item-0' }] }];
    for (const [i, query] of queries.entries()) {
      const answers = await runsUntilCompiled(query, { show: false });
      expect(answers.map((answer) => answer.data)).toEqual(answers.map(() => expected[i]));
    }
    expect(execution.compiledRuns).toBe(0);
    expect(builds).toBe(0);
  });

  it('answers variables that do not fit their types with graphql-js own error (400, BAD_USER_INPUT), compiled or not', async () => {
    await runsUntilCompiled(FINE, { n: 1 });
    expect(execution.compiled).toBe(1);
    // Apollo Server on its own: graphql-js executes.
    const reference = new ApolloServer({ schema: build(), plugins: builtInPluginsOff(), formatError: createErrorFormatter(() => undefined) });
    await reference.start();
    try {
      const before = await reference.executeOperation({ query: FINE, variables: { n: 'two' } });
      const after = await run(FINE, { n: 'two' });
      expect(before.body.kind === 'single' && before.body.singleResult).toEqual({ errors: after.errors });
      expect(after.status).toBe(400);
      expect(after.errors?.[0]?.extensions?.['code']).toBe('BAD_USER_INPUT');
      expect(after.errors?.[0]?.message).toMatch(/^Variable "\$n" got invalid value "two"/);
    } finally {
      await reference.stop();
    }
  });

  it('runs a request whose plugins watch its fields through graphql-js, after compilation too', async () => {
    const [first] = await runsUntilCompiled('{ items(n: 3) { id name } }');
    expect(watchedFields).toBe(0);
    const watched = await run('{ items(n: 3) { id name } }', undefined, { watch: true });
    expect(watchedFields).toBe(1 + 3 * 2);
    expect(watched.data).toEqual(first!.data);
    // Apollo's instrumentation wrapped its schema's resolvers; compiled queries run on their own copy.
    const after = await run('{ items(n: 3) { id name } }');
    expect(watchedFields).toBe(7);
    expect(after.data).toEqual(first!.data);
  });

  /** An operation of its own shape (canonical forms differ by shape, not by names or literals): seven fields, each `items` or `item` by the bits of i. */
  const shaped = (name: string, i: number) =>
    `query ${name} { ${Array.from({ length: 7 }, (_, k) => (i & (1 << k) ? `x${k}: item(id: "item-0") { id }` : `x${k}: items(n: 1) { id }`)).join(' ')} }`;

  it('keeps at most MAX_COMPILED compiled operations: the one used least recently goes, and compiles again when seen again', async () => {
    for (let i = 0; i < MAX_COMPILED; i++) await runsUntilCompiled(shaped(`Q${i}`, i));
    expect(execution.compiled).toBe(MAX_COMPILED);
    // Q0 used again: Q1 is now the least recently used.
    await run(shaped('Q0', 0));
    const answers = await runsUntilCompiled('query Past { items(n: 1, prefix: "past") { id name } }');
    expect(execution.compiled).toBe(MAX_COMPILED);
    expect(answers.map((answer) => answer.data)).toEqual(answers.map(() => ({ items: [{ id: 'past-0', name: 'name of past-0' }] })));
    // Q1 went: its next runs are graphql-js's (counted), then it compiles again, pushing out Q2.
    const q1 = await runsUntilCompiled(shaped('Q1', 1));
    const q1Data = { x0: { id: 'item-0' }, ...Object.fromEntries(Array.from({ length: 6 }, (_, k) => [`x${k + 1}`, [{ id: 'item-0' }]])) };
    expect(q1.map((answer) => answer.data)).toEqual(q1.map(() => q1Data));
    expect(execution.compiled).toBe(MAX_COMPILED);
    expect(builds).toBe(1);
  });

  it('shares one compiled query among operations that differ only in literals, aliases, names and variable names', async () => {
    await runsUntilCompiled('query A { one: item(id: "a") { id name } }');
    expect(execution.compiled).toBe(1);
    // Another document of the same shape runs compiled from its first run: nothing is compiled anew.
    const other = await run('query B($which: ID!) { other: item(id: $which) { id name } }', { which: 'b' });
    expect(other.data).toEqual({ other: { id: 'b', name: 'name of b' } });
    const literal = await run('{ third: item(id: "c") { id name } }');
    expect(literal.data).toEqual({ third: { id: 'c', name: 'name of c' } });
    expect(execution.compiled).toBe(1);
  });

  it('never compiles an operation selecting more than MAX_COMPILED_FIELDS fields, and answers it all the same', async () => {
    // Each alias: items and the fragment's 5 fields.
    const aliases = Math.ceil((MAX_COMPILED_FIELDS + 1) / 6);
    const many = Array.from({ length: aliases }, (_, i) => `a${i}: items(n: 2) { ...All }`).join(' ');
    const query = `query Many { ${many} } fragment All on Item { id name id3: id id2: id name2: name }`;
    const answers = await runsUntilCompiled(query);
    expect(execution.compiled).toBe(0);
    expect(answers[2]).toEqual(answers[0]);
    expect(Object.keys(answers[0]!.data ?? {})).toHaveLength(aliases);
    // One field fewer per alias is within the bound: compiled.
    await runsUntilCompiled(query.replace(' name2: name', ''));
    expect(execution.compiled).toBe(1);
  });
});

describe('selectedFields (the measure of the fields limit, which bounds what is compiled)', () => {
  const operationOf = (text: string) => {
    const document = gql(text);
    return { document, operation: document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)! };
  };

  it('counts fields with fragments expanded, each spread of a fragment again', () => {
    const { document, operation } = operationOf('{ items(n: 1) { ...F ... on Item { name } } one: item(id: "x") { ...F } } fragment F on Item { id name }');
    // items, F (2), name, one, F (2)
    expect(selectedFields(document, operation)).toBe(7);
  });

  it('counts every aliased field', () => {
    const { document, operation } = operationOf(`{ ${Array.from({ length: 50 }, (_, i) => `a${i}: items(n: 1) { id }`).join(' ')} }`);
    expect(selectedFields(document, operation)).toBe(100);
  });
});
