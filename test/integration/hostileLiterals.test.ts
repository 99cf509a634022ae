import { as } from '../helpers/fixtures';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * Compiled execution never lets a client's text into generated code
 * (src/graphql/server/canonicalOperation.ts). graphql-jit turns what it compiles into
 * JavaScript source run through `Function`; once it wrote a string literal marked as a
 * date unescaped into that source, and a client ran its own code in the replica.
 *
 * Documents with hostile literals in every position a client can put one (field
 * arguments, input objects, lists of representations, variable default values,
 * literals beside variables, block strings) run on a subgraph that compiles at the first
 * run. Every source graphql-jit hands to `Function` is recorded: none holds any of the
 * client's text, and no payload ever runs.
 */

const MARKER = '__MAGIC_DATE__33a9e76d_02e0_4128_8e92_3530ad3da74d';
/** What each payload would do if it ran: set this global. */
const OWNED = '__wfsOwned';

const hostile: Record<string, string> = {
  marker: `${MARKER}(globalThis.${OWNED}=1,0)`,
  markerInName: `${MARKER}(globalThis['${OWNED}']=2,0)`,
  quotes: `"+(globalThis.${OWNED}=3)+"`,
  singleQuotes: `'+(globalThis.${OWNED}=4)+'`,
  backslashes: `\\"+(globalThis.${OWNED}=5)+\\"\\\\`,
  template: `\${globalThis.${OWNED}=6}\`+(globalThis.${OWNED}=6)+\``,
  lineSeparators: `\u2028(globalThis.${OWNED}=7)\u2029`,
  script: `</script><script>globalThis.${OWNED}=8</script>`,
  comment: `*/globalThis.${OWNED}=9;/*`,
  long: `${MARKER}(${'x'.repeat(20_000)})`,
};

/** Text no generated source may hold (the distinctive part of each payload). */
const forbidden = [MARKER, OWNED, '</script>', '\u2028', '\u2029', 'x'.repeat(100)];

const literal = (text: string) => JSON.stringify(text);
const block = (text: string) => `"""${text.replace(/"""/g, '\\"""')}"""`;

/** Every position a literal can take in this schema, for one hostile text. */
function documents(text: string): Array<{ query: string; variables?: Record<string, unknown> }> {
  const s = literal(text);
  return [
    { query: `{ shift(id: ${s}) { id } }` },
    { query: `{ location(id: ${block(text)}) { id name } }` },
    { query: `{ node(nodeId: ${s}) { nodeId } }` },
    { query: `{ shifts(first: 2, after: ${s}) { nodes { id } } }` },
    { query: `{ locations(last: 2, before: ${s}) { nodes { id } } }` },
    { query: `{ shifts(first: 2, filter: { locationId: ${s} }) { nodes { id } } }` },
    { query: `{ shifts(first: 2, filter: { locationId: ${s}, startsFrom: ${s} }) { nodes { id } } }` },
    { query: `{ _entities(representations: [{ __typename: "Shift", id: ${s} }, { __typename: ${s}, id: "1", extra: [${s}, { deep: ${s} }] }]) { ... on Shift { id } } }` },
    { query: `query Q($id: ID! = ${s}) { shift(id: $id) { id } }` },
    { query: `query Q($filter: ShiftFilter = { locationId: ${s} }) { shifts(first: 1, filter: $filter) { nodes { id } } }` },
    { query: `query Q($loc: ID) { shifts(first: 1, filter: { locationId: $loc, startsBefore: ${s} }) { nodes { id } } }`, variables: { loc: text } },
    { query: `query Q($id: ID!) { shift(id: $id) { id } }`, variables: { id: text } },
    { query: `query Q($reps: [_Any!]!) { _entities(representations: $reps) { __typename } }`, variables: { reps: [{ __typename: 'Location', id: text }] } },
  ];
}

const RealFunction = globalThis.Function;
const sources: string[] = [];
let subgraph: TestSubgraph;

beforeAll(async () => {
  // Every source handed to Function while the subgraph runs in this process (graphql-jit's `new Function` and `Function.apply`).
  globalThis.Function = new Proxy(RealFunction, {
    construct(target, args: string[]) {
      sources.push(args.join('\n'));
      return Reflect.construct(target, args);
    },
    apply(target, self, args: string[]) {
      sources.push(args.join('\n'));
      return Reflect.apply(target, self, args);
    },
  });
  subgraph = await startTestSubgraph({}, { LOG_LEVEL: 'silent' }, { compileAfter: 0 });
});

afterAll(async () => {
  globalThis.Function = RealFunction;
  await subgraph?.close();
});

describe('hostile literals past the compile threshold', () => {
  it.each(Object.entries(hostile))('%s: runs nothing, and no generated source holds the client text', async (_name, text) => {
    const headers = as(subgraph.emulator.tenants[0]!);
    for (const { query, variables } of documents(text)) {
      // Twice: the second run is compiled even where a threshold of one run applied.
      for (let run = 0; run < 2; run++) {
        const answer = await subgraph.query(query, variables, headers);
        expect([200, 400]).toContain(answer.status);
      }
    }
    expect((globalThis as Record<string, unknown>)[OWNED]).toBeUndefined();
    for (const source of sources) for (const text of forbidden) expect(source.includes(text) ? text : undefined).toBeUndefined();
  });

  it('compiled every shape of document above (so the checks were about real generated code)', () => {
    // Documents that differ only in literals share one compiled query: one compilation per shape,
    // each at least two sources (the query and its variables' parsing). `_entities` is never
    // compiled (canonicalOperation.ts, LISTS_OF_PROMISES): its literals reach no generated code.
    expect(sources.length).toBeGreaterThanOrEqual(2 * documents('x').filter(({ query }) => !query.includes('_entities')).length);
  });

  it('answers a hostile literal compiled as graphql-js does', async () => {
    const headers = as(subgraph.emulator.tenants[0]!);
    const query = `{ shift(id: ${literal(hostile['marker']!)}) { id } }`;
    // The router's trace header makes a request run through graphql-js (execution.ts); the plain one runs compiled.
    const interpreted = await subgraph.query(query, undefined, { ...headers, 'apollo-federation-include-trace': 'ftv1' });
    const compiled = await subgraph.query(query, undefined, headers);
    expect(compiled.data).toEqual(interpreted.data);
    expect(compiled.errors?.map((e) => [e.message, e.extensions?.code, e.path])).toEqual(interpreted.errors?.map((e) => [e.message, e.extensions?.code, e.path]));
  });
});
