import { getIntrospectionQuery } from 'graphql';
import { makeTenant } from '../../src/emulator';
import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * Issue 11 item 2: every limit counts every field, introspection included; only a
 * real `__schema`/`__type` field has its own (looser) depth bound, never a fragment
 * by its name. A refused document is HTTP 400 GRAPHQL_VALIDATION_FAILED and costs
 * the upstream nothing.
 */
const A = makeTenant({ tenantId: 'aaaaaaaa-0000-4000-8000-00000000000a', clientId: 'client-a', clientSecret: 'secret-a-limits-1', grantedScopes: ['shifts.read'], shard: 0, locationCount: 5, shiftCount: 5 });
const as = { 'x-tenant-id': A.tenantId };
const LIST = 'locations(first: 1) { nodes { id } }';

let subgraph: TestSubgraph;
beforeAll(async () => {
  subgraph = await startTestSubgraph({ tenants: [A] });
});
afterAll(async () => {
  await subgraph.close();
});
beforeEach(() => subgraph.emulator.resetCounters());

const upstreamCalls = () => subgraph.emulator.counters.tokenRequests + subgraph.emulator.counters.listRequests.locations + subgraph.emulator.counters.listRequests.shifts;
const repeat = (count: number, item: (i: number) => string) => Array.from({ length: count }, (_, i) => item(i)).join(' ');
const nested = (levels: number, field: string, leaf: string) => `${`${field} { `.repeat(levels)}${leaf}${' }'.repeat(levels)}`;

/** Each abusive query of the issue, and the limit that must refuse it. */
const abusive: Array<[string, string, RegExp]> = [
  ['1,000 aliases of __typename beside a list', `{ ${repeat(1000, (i) => `t${i}: __typename`)} ${LIST} }`, /1000 aliases/],
  ['a 50-level __type { ofType … } chain beside a list', `{ __type(name: "Location") { ${nested(50, 'ofType', 'name')} } ${LIST} }`, /nests introspection 52 fields deep/],
  [
    'a fragment named __schema holding a deep selection',
    `{ ...__schema } fragment __schema on Query { ${LIST} __type(name: "Shift") { ${nested(25, 'ofType', 'name')} } }`,
    /nests introspection 27 fields deep/,
  ],
  ['1,000 aliases of a list', `{ ${repeat(1000, (i) => `l${i}: ${LIST}`)} }`, /more tha[nt] 5000 tokens/],
  ['1,000 directives with arguments', `{ locations(first: 1) ${repeat(1000, () => '@include(if: true)')} { nodes { id } } }`, /more tha[nt] 5000 tokens/],
  ['1,000 bare directives', `{ locations(first: 1) ${repeat(1000, () => '@cached')} { nodes { id } } }`, /1000 directives/],
  ['20,000 tokens', `{ ${LIST} ${repeat(20_000, () => '__typename')} }`, /more tha[nt] 5000 tokens/],
  [
    'a fragment fan-out of 10^5 fields',
    `{ ...F5 } ${[1, 2, 3, 4, 5].map((n) => `fragment F${n} on Query { ${repeat(10, (i) => (n === 1 ? `a${i}: __typename` : `...F${n - 1}`))} }`).join(' ')}`,
    /selects 100000 fields/,
  ],
];

describe('query limits', () => {
  it.each(abusive)('refuses %s with HTTP 400 GRAPHQL_VALIDATION_FAILED and no upstream call', async (_name, query, why) => {
    const response = await subgraph.query(query, {}, as);
    expect(response.status).toBe(400);
    expect(response.data).toBeUndefined();
    expect(errorCodes(response).length).toBeGreaterThan(0);
    expect(new Set(errorCodes(response))).toEqual(new Set(['GRAPHQL_VALIDATION_FAILED']));
    expect(response.errors?.map((error) => error.message).join('\n')).toMatch(why);
    expect(upstreamCalls()).toBe(0);
  });

  it("passes the introspection query GraphiQL sends (graphql-js's full one)", async () => {
    const response = await subgraph.query(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true, oneOf: true }));
    expect(response.status).toBe(200);
    expect(response.errors).toBeUndefined();
    expect(response.data?.__schema?.types?.length).toBeGreaterThan(10);
  });

  it("passes GraphQL Code Generator's introspection query", async () => {
    // @graphql-tools/url-loader (what codegen uses for a URL schema) sends graphql-js's query with these options.
    const response = await subgraph.query(getIntrospectionQuery({ descriptions: true, specifiedByUrl: false, directiveIsRepeatable: true, schemaDescription: false, inputValueDeprecation: true }));
    expect(response.status).toBe(200);
    expect(response.errors).toBeUndefined();
  });

  it('still serves the deepest data query of the schema and 30 aliases', async () => {
    const deep = '{ shifts(first: 1) { edges { node { location { name } } } } }';
    const response = await subgraph.query(deep, {}, as);
    expect(response.status).toBe(200);
    expect(response.errors).toBeUndefined();
    const aliases = await subgraph.query(`{ ${repeat(30, (i) => `t${i}: __typename`)} }`, {}, as);
    expect(aliases.status).toBe(200);
    expect(aliases.errors).toBeUndefined();
  });
});
