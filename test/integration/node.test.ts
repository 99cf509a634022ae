import { demoTenants, makeTenant, startEmulator, type Emulator, type EmulatorTenant } from '../../tools/emulator';
import { encodeNodeId } from '../../src/graphql/data/node';
import { withNumericIds } from '../helpers/numericIds';
import { errorCodes, listsCalled, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * `Query.node(nodeId:)` over real HTTP: within the request's tenant only, null for what
 * the tenant does not have, BAD_USER_INPUT (and no upstream call) for what is no node
 * id, and never dearer than the entity reference (`_entities`) for the same record.
 */

// 250 locations: an id deep in the list costs several upstream pages to find.
const big = withNumericIds(makeTenant({ tenantId: '3a4b5c6d-7e8f-4091-a2b3-c4d5e6f70819', locationCount: 250, shiftCount: 300 }));
const other = withNumericIds(makeTenant({ tenantId: '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a', locationCount: 3, shiftCount: 3, shard: 1 }), 900, 900);
const tenants: EmulatorTenant[] = [big, other, ...demoTenants()];
const as = (tenant: EmulatorTenant) => ({ 'x-tenant-id': tenant.tenantId });

const NODE = `query ($nodeId: ID!) { node(nodeId: $nodeId) { __typename nodeId ... on Location { id name } ... on Shift { id start location { nodeId } } } }`;

let emulator: Emulator;
let subgraph: TestSubgraph;

beforeAll(async () => {
  emulator = await startEmulator({ tenants });
  subgraph = await startTestSubgraph({}, {}, {}, emulator);
});

afterAll(async () => {
  await subgraph.close();
  await emulator.close();
});

beforeEach(() => emulator.resetCounters());

describe('Query.node', () => {
  it('answers a location and a shift that share an upstream id as two different nodes', async () => {
    const response = await subgraph.query(
      `{ l: node(nodeId: "${encodeNodeId('Location', '7')}") { __typename nodeId ... on Location { id name } }
         s: node(nodeId: "${encodeNodeId('Shift', '7')}") { __typename nodeId ... on Shift { id location { id nodeId } } } }`,
      {},
      as(big),
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.l).toEqual({ __typename: 'Location', nodeId: encodeNodeId('Location', '7'), id: '7', name: big.locations[6]!.name });
    const shiftLocation = big.shifts[6]!.location;
    expect(response.data.s).toEqual({ __typename: 'Shift', nodeId: encodeNodeId('Shift', '7'), id: '7', location: { id: shiftLocation, nodeId: encodeNodeId('Location', shiftLocation) } });
  });

  it('gives every Location and Shift in a connection the nodeId that node() takes back', async () => {
    const list = await subgraph.query('{ locations(first: 3) { nodes { id nodeId } } shifts(first: 3) { nodes { id nodeId } } }', {}, as(big));
    for (const { id, nodeId } of list.data.locations.nodes) expect(nodeId).toBe(encodeNodeId('Location', id));
    for (const { id, nodeId } of list.data.shifts.nodes) expect(nodeId).toBe(encodeNodeId('Shift', id));
  });

  it("is null for another tenant's record, an unknown id, and a type it does not serve", async () => {
    for (const nodeId of [
      encodeNodeId('Location', other.locations[0]!.id),
      encodeNodeId('Location', demoTenants()[0]!.locations[0]!.id),
      encodeNodeId('Shift', 'shf_nope'),
      encodeNodeId('User', '1'),
      encodeNodeId('PageInfo', '1'),
    ]) {
      const response = await subgraph.query(NODE, { nodeId }, as(big));
      expect({ nodeId, data: response.data, errors: response.errors }).toEqual({ nodeId, data: { node: null }, errors: undefined });
    }
  });

  it('answers the same node id for the tenant it came from', async () => {
    const nodeId = encodeNodeId('Location', other.locations[0]!.id);
    const response = await subgraph.query(NODE, { nodeId }, as(other));
    expect(response.data.node).toMatchObject({ __typename: 'Location', id: other.locations[0]!.id });
    expect(emulator.counters.listRequestsByTenant[big.tenantId]).toBeUndefined();
  });

  it('refuses what is no node id with BAD_USER_INPUT and no upstream call', async () => {
    for (const nodeId of ['garbage!', 'TG9jYXRpb246MQ==', Buffer.from('no colon').toString('base64url'), 'x'.repeat(5000)]) {
      const response = await subgraph.query(NODE, { nodeId }, as(big));
      expect({ status: response.status, data: response.data, codes: errorCodes(response) }).toEqual({ status: 200, data: { node: null }, codes: ['BAD_USER_INPUT'] });
    }
    expect(listsCalled(emulator.counters.listRequests)).toEqual({});
    expect(emulator.counters.tokenRequests).toBe(0);
  });

  it('needs an identity like every other field', async () => {
    const response = await subgraph.query(NODE, { nodeId: encodeNodeId('Location', '1') });
    expect(errorCodes(response)).toEqual(['UNAUTHENTICATED']);
  });

  it('costs no more upstream calls than the entity reference for the same records, batched with it', async () => {
    // A fresh subgraph for each, so neither finds the other's entity index warm.
    const wanted = ['180', '3', '240'];
    const byEntities = await startTestSubgraph({}, {}, {}, emulator);
    const byNode = await startTestSubgraph({}, {}, {}, emulator);
    try {
      emulator.resetCounters();
      const entities = await byEntities.query(
        'query ($r: [_Any!]!) { _entities(representations: $r) { ... on Location { id name } } }',
        { r: wanted.map((id) => ({ __typename: 'Location', id })) },
        as(big),
      );
      const entityCalls = emulator.counters.listRequests.locations;
      emulator.resetCounters();
      const nodes = await byNode.query(
        `{ ${wanted.map((id, index) => `n${index}: node(nodeId: "${encodeNodeId('Location', id)}") { ... on Location { id name } }`).join(' ')} }`,
        {},
        as(big),
      );
      const nodeCalls = emulator.counters.listRequests.locations;
      expect(nodes.data).toEqual({ n0: entities.data._entities[0], n1: entities.data._entities[1], n2: entities.data._entities[2] });
      // 250 locations in pages of 100: id 240 is on the third page, found in one batched scan.
      expect({ entityCalls, nodeCalls }).toEqual({ entityCalls: 3, nodeCalls: 3 });
    } finally {
      await byEntities.close();
      await byNode.close();
    }
  });
});
