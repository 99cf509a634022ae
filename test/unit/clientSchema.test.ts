import { buildClientSchema, introspectionFromSchema, printSchema } from 'graphql';
import { clientFacingIntrospection } from '../../src/explorer/clientSchema';
import { createSubgraphSchema } from '../../src/graphql/server/schema';

/** What the explorer's docs pane shows: the subgraph's introspection without federation machinery. */

const FEDERATION_NAMES = /^(_Service|_Any|_Entity|_FieldSet|FieldSet|link__.*|federation__.*)$/;

describe('clientFacingIntrospection', () => {
  const full = introspectionFromSchema(createSubgraphSchema());
  const clientFacing = clientFacingIntrospection(full);
  const schema = buildClientSchema(clientFacing);

  it('starts from a schema that has the federation machinery (so the test means something)', () => {
    const names = full.__schema.types.map((type) => type.name);
    expect(names).toEqual(expect.arrayContaining(['_Service', '_Any', '_Entity', 'link__Import', 'federation__FieldSet']));
    expect(full.__schema.directives.map((directive) => directive.name)).toEqual(expect.arrayContaining(['key', 'link']));
  });

  it('lists no federation type, no _entities or _service field and no federation directive', () => {
    expect(Object.keys(schema.getTypeMap()).filter((name) => FEDERATION_NAMES.test(name))).toEqual([]);
    expect(Object.keys(schema.getQueryType()?.getFields() ?? {})).not.toEqual(expect.arrayContaining(['_entities']));
    expect(Object.keys(schema.getQueryType()?.getFields() ?? {}).filter((name) => name.startsWith('_'))).toEqual([]);
    expect(schema.getDirectives().map((directive) => directive.name).sort()).toEqual(['deprecated', 'include', 'oneOf', 'skip', 'specifiedBy']);
  });

  it('keeps every type, field and description of our own API', () => {
    const ours = Object.keys(buildClientSchema(full).getTypeMap()).filter((name) => !FEDERATION_NAMES.test(name));
    expect(Object.keys(schema.getTypeMap()).sort()).toEqual(ours.sort());
    expect(Object.keys(schema.getQueryType()?.getFields() ?? {})).toEqual(expect.arrayContaining(['locations', 'shifts', 'node']));
    expect(schema.getQueryType()?.getFields()['locations']?.description).toMatch(/locations/);
    expect(printSchema(schema)).toContain('interface Node');
  });
});
