import { composeServices, type CompositionResult } from '@apollo/composition';
import { operationFromDocument, Supergraph } from '@apollo/federation-internals';
import { prettyFormatQueryPlan, QueryPlanner } from '@apollo/query-planner';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, type GraphQLInterfaceType } from 'graphql';

/**
 * Our `Node` interface in a supergraph, and whether the people example's `User` can be
 * a `Node` too (docs/frontend.md, "Global object identification (`Node`)"). Composition with
 * @apollo/composition, and the router's query plan from @apollo/query-planner, the
 * planner Apollo Router and Gateway use.
 */

const repoRoot = path.resolve(__dirname, '../..');
const wfsSdl = readFileSync(path.join(repoRoot, 'schema.graphql'), 'utf8');
const peopleSdl = readFileSync(path.join(repoRoot, 'examples', 'people-subgraph', 'schema.graphql'), 'utf8');

function compose(wfs: string, people: string): CompositionResult {
  return composeServices([
    { name: 'wfs', url: 'http://wfs/graphql', typeDefs: parse(wfs) },
    { name: 'people', url: 'http://people/graphql', typeDefs: parse(people) },
  ]);
}

function errorsOf(result: CompositionResult): string[] {
  return (result.errors ?? []).map((error) => `${String(error.extensions['code'])}: ${error.message}`);
}

function nodeTypes(result: CompositionResult): string[] {
  const api = result.schema!.toAPISchema().toGraphQLJSSchema();
  return api.getPossibleTypes(api.getType('Node') as GraphQLInterfaceType).map((type) => type.name).sort();
}

/** The router's plan for `query`, printed. */
function plan(result: CompositionResult, query: string): string {
  const supergraph = Supergraph.build(result.supergraphSdl!);
  return prettyFormatQueryPlan(new QueryPlanner(supergraph).buildQueryPlan(operationFromDocument(supergraph.schema.toAPISchema(), parse(query))));
}

/** Edits a schema, failing loudly when the text to replace is not there. */
function edit(sdl: string, from: string, to: string): string {
  if (!sdl.includes(from)) throw new Error(`not found in schema: ${from}`);
  return sdl.replace(from, to);
}

const userStub = 'type User @key(fields: "id", resolvable: false) {';
const peopleUser = 'type User @key(fields: "id") {\n  id: ID!';
const nodeIdField = '\n  "An opaque id, unique across all types of this API; pass it to `Query.node`."\n  nodeId: ID!';

describe('Node in the supergraph', () => {
  it('composes with the people subgraph; Location and Shift are the Nodes, and people fields join a node', () => {
    const result = compose(wfsSdl, peopleSdl);
    expect(errorsOf(result)).toEqual([]);
    expect(nodeTypes(result)).toEqual(['Location', 'Shift']);
    const refetch = plan(result, '{ node(nodeId: "x") { nodeId ... on Location { name headcount } } }');
    // The router asks us for the node, then the people subgraph for its fields of it, by `id`.
    expect(refetch).toMatch(/Fetch\(service: "wfs"\)[\s\S]*node\(nodeId: "x"\)[\s\S]*Fetch\(service: "people"\)[\s\S]*headcount/);
  });

  it('User cannot become a Node from the people subgraph alone: it composes, but node() can never return a User', () => {
    const people = edit(
      peopleSdl,
      peopleUser,
      `"An object with a node id."\ninterface Node {${nodeIdField}\n}\n\ntype User implements Node @key(fields: "id") {\n  id: ID!${nodeIdField}`,
    );
    const result = compose(wfsSdl, people);
    expect(errorsOf(result)).toEqual([]);
    expect(nodeTypes(result)).toEqual(['Location', 'Shift', 'User']);
    // Our node() knows no User: the plan never fetches one, so a User's node id is null.
    expect(plan(result, '{ node(nodeId: "x") { nodeId ... on User { name } } }')).not.toContain('User');
  });

  it('User can be a Node when the subgraph serving node() declares it: node() answers a User reference, people resolves it', () => {
    const wfs = edit(wfsSdl, `${userStub}\n  "The person's id, shared with the subgraph that owns users."\n  id: ID!`, `type User implements Node @key(fields: "id") {\n  "The person's id, shared with the subgraph that owns users."\n  id: ID!${nodeIdField}`);
    const result = compose(wfs, peopleSdl);
    expect(errorsOf(result)).toEqual([]);
    expect(result.hints ?? []).toEqual([]);
    expect(nodeTypes(result)).toEqual(['Location', 'Shift', 'User']);
    expect(plan(result, '{ node(nodeId: "x") { nodeId ... on User { name } } }')).toMatch(
      /Fetch\(service: "wfs"\)[\s\S]*\.\.\. on User[\s\S]*Fetch\(service: "people"\)[\s\S]*name/,
    );
  });

  it("Federation's entity interfaces do not help: the subgraph with Node's @key must define every implementation, User included", () => {
    const wfs = edit(
      edit(
        edit(edit(wfsSdl, 'import: ["@key", "@shareable", "@cost", "@listSize"]', 'import: ["@key", "@shareable", "@cost", "@listSize", "@interfaceObject"]'), 'interface Node {', 'interface Node @key(fields: "nodeId") {'),
        'type Location implements Node @key(fields: "id")',
        'type Location implements Node @key(fields: "id") @key(fields: "nodeId")',
      ),
      'type Shift implements Node @key(fields: "id")',
      'type Shift implements Node @key(fields: "id") @key(fields: "nodeId")',
    );
    // People declares User a Node: refused until wfs defines User as a Node itself.
    const people = edit(peopleSdl, peopleUser, `"An object with a node id."\ninterface Node {${nodeIdField}\n}\n\ntype User implements Node @key(fields: "id") {\n  id: ID!${nodeIdField}`);
    expect(errorsOf(compose(wfs, people))).toEqual([expect.stringContaining('INTERFACE_KEY_MISSING_IMPLEMENTATION_TYPE')]);
    // @interfaceObject lets people add fields to every Node, not add implementations, and
    // only in a subgraph that defines none of them (people defines Location and Shift).
    const interfaceObject = `${edit(peopleSdl, 'import: ["@key", "@shareable"]', 'import: ["@key", "@shareable", "@interfaceObject"]')}\n"Any node, as the people subgraph sees it."\ntype Node @interfaceObject @key(fields: "nodeId") {${nodeIdField}\n}\n`;
    expect(errorsOf(compose(wfs, interfaceObject))).toEqual([expect.stringContaining('INTERFACE_OBJECT_USAGE_ERROR')]);
  });
});
