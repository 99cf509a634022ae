import { GraphQLError } from 'graphql';
import { decodeNodeId, encodeNodeId, MAX_NODE_ID_LENGTH, resolveNode, type NodeLoader } from '../../src/graphql/data/node';

function codeOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error instanceof GraphQLError ? error.extensions['code'] : error;
  }
  return 'no error';
}

/** A loader over a fixed map that counts its loads. */
function loaderOf(records: Record<string, { id: string; name?: string }>) {
  const loads: string[] = [];
  const loader: NodeLoader = {
    load: async (id) => {
      loads.push(id);
      return records[id] ?? null;
    },
  };
  return { loader, loads };
}

describe('node ids', () => {
  it('are base64url of Typename:id, unique across types for the same upstream id', () => {
    expect(encodeNodeId('Location', '17')).toBe(Buffer.from('Location:17').toString('base64url'));
    expect(encodeNodeId('Location', '17')).not.toBe(encodeNodeId('Shift', '17'));
    expect(decodeNodeId(encodeNodeId('Shift', '17'))).toEqual({ typename: 'Shift', id: '17' });
  });

  it('round-trip any upstream id, colons and non-ASCII included', () => {
    for (const id of ['a:b:c', 'loc_hlc_001', 'ü-ñ-漢', ' spaced ', '0']) {
      expect(decodeNodeId(encodeNodeId('Location', id))).toEqual({ typename: 'Location', id });
    }
  });

  it.each([
    ['empty', ''],
    ['not base64url', 'TG9jYXRpb246MQ=='],
    ['standard base64 alphabet', Buffer.from('Location:>>?').toString('base64')],
    ['no colon', Buffer.from('Location').toString('base64url')],
    ['empty id', Buffer.from('Location:').toString('base64url')],
    ['empty typename', Buffer.from(':17').toString('base64url')],
    ['typename not a GraphQL name', Buffer.from('Loc ation:17').toString('base64url')],
    ['invalid UTF-8', Buffer.from([0x4c, 0x3a, 0xff, 0xfe]).toString('base64url')],
    ['non-canonical trailing bits', `${encodeNodeId('Location', '1').slice(0, -1)}${'x'}`],
    ['too long', encodeNodeId('Location', 'x'.repeat(MAX_NODE_ID_LENGTH))],
  ])('refuse %s with BAD_USER_INPUT', (_case, nodeId) => {
    expect(codeOf(() => decodeNodeId(nodeId))).toBe('BAD_USER_INPUT');
  });
});

/** The types a caller serves, as `Query.node` looks them up (a Map: inherited names are not types). */
function served(loaders: Record<string, NodeLoader>): (typename: string) => NodeLoader | undefined {
  const byTypename = new Map(Object.entries(loaders));
  return (typename) => byTypename.get(typename);
}

describe('resolveNode', () => {
  it('loads through the loader of the id type and tags the record with its typename', async () => {
    const locations = loaderOf({ '17': { id: '17', name: 'Quay' } });
    const shifts = loaderOf({ '17': { id: '17' } });
    const node = await resolveNode(encodeNodeId('Location', '17'), served({ Location: locations.loader, Shift: shifts.loader }));
    expect(node).toEqual({ id: '17', name: 'Quay', __typename: 'Location' });
    expect({ locations: locations.loads, shifts: shifts.loads }).toEqual({ locations: ['17'], shifts: [] });
  });

  it('is null for an id the loader does not have', async () => {
    const locations = loaderOf({});
    expect(await resolveNode(encodeNodeId('Location', '404'), served({ Location: locations.loader }))).toBeNull();
  });

  it('is null, with no lookup, for a type it does not serve, inherited names included', async () => {
    const locations = loaderOf({ '1': { id: '1' } });
    for (const typename of ['User', 'constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(await resolveNode(encodeNodeId(typename, '1'), served({ Location: locations.loader }))).toBeNull();
    }
    expect(locations.loads).toEqual([]);
  });

  it('does not change the record the loader shares with the rest of the request', async () => {
    const record = { id: '1', name: 'Quay' };
    const locations = loaderOf({ '1': record });
    await resolveNode(encodeNodeId('Location', '1'), served({ Location: locations.loader }));
    expect(record).toEqual({ id: '1', name: 'Quay' });
  });
});
