import { parse, specifiedRules, validate } from 'graphql';
import { DEFAULT_QUERY_LIMITS, limitRules, type QueryLimits } from '../../src/graphql/admission/limits';
import { createSubgraphSchema } from '../../src/graphql/server/schema';

const schema = createSubgraphSchema();
const check = (query: string, limits: Partial<QueryLimits> = {}) =>
  validate(schema, parse(query), [...specifiedRules, ...limitRules({ ...DEFAULT_QUERY_LIMITS, ...limits })]).map((error) => error.message);

describe('query limits (validation rules)', () => {
  it('counts data depth through a fragment named __schema (no exemption by name)', () => {
    const inFragment = '{ ...__schema } fragment __schema on Query { shifts { nodes { location { name } } } }';
    expect(check(inFragment, { maxDepth: 3 })).toEqual(['operation is 4 fields deep; at most 3 are allowed']);
    expect(check(inFragment, { maxDepth: 4 })).toEqual([]);
  });

  it('counts depth through inline fragments and named operations alike', () => {
    expect(check('query Q { ... on Query { shifts { nodes { location { name } } } } }', { maxDepth: 3 })).toEqual(['operation Q is 4 fields deep; at most 3 are allowed']);
  });

  it('keeps a real __type field out of the data depth and bounds it on its own', () => {
    const chain = (levels: number) => `{ __type(name: "Shift") { ${'ofType { '.repeat(levels)}name${' }'.repeat(levels)} } }`;
    expect(check(chain(8), { maxDepth: 3 })).toEqual([]);
    expect(check(chain(8), { maxIntrospectionDepth: 9 })).toEqual(['operation nests introspection 10 fields deep; at most 9 are allowed']);
  });

  it('counts aliases and fields once per fragment spread, introspection fields included', () => {
    const twice = '{ ...A ...B } fragment A on Query { ...C } fragment B on Query { ...C } fragment C on Query { x: __typename y: __typename }';
    expect(check(twice, { maxAliases: 3 })).toEqual(['operation has 4 aliases; at most 3 are allowed']);
    expect(check(twice, { maxFields: 3 })).toEqual(['operation selects 4 fields once fragments are expanded; at most 3 are allowed']);
  });

  it('counts every directive in the document', () => {
    expect(check('{ __typename @skip(if: false) @include(if: true) }', { maxDirectives: 1 })).toEqual(['the document has 2 directives; at most 1 are allowed']);
  });

  it('survives a fragment cycle (graphql-js reports the cycle itself)', () => {
    expect(check('{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }').join('\n')).toMatch(/Cannot spread fragment "A" within itself/);
  });
});
