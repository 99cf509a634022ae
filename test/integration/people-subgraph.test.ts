import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';

/** The example people subgraph answers like a real one: for any id, the same way every time. */

interface Response {
  data?: Record<string, any> | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

describe('example people subgraph', () => {
  let people: RunningPeopleSubgraph;

  beforeAll(async () => {
    people = await startPeopleSubgraph();
  });

  afterAll(async () => {
    await people.close();
  });

  async function query(text: string, variables: Record<string, unknown> = {}): Promise<Response> {
    const response = await fetch(people.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: text, variables }),
    });
    return (await response.json()) as Response;
  }

  it('listens on loopback at /graphql', () => {
    expect(people.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
  });

  it('resolves users, and its fields of our locations and shifts, for any id, deterministically', async () => {
    const entities = `query ($representations: [_Any!]!) {
      _entities(representations: $representations) {
        ... on User { id name role email }
        ... on Location { id headcount manager { id name } }
        ... on Shift { id notes }
      }
    }`;
    const representations = [
      { __typename: 'User', id: 'usr_7Hq2' },
      { __typename: 'Location', id: 'loc_harbour' },
      { __typename: 'Shift', id: 'shf_0001' },
    ];
    const first = await query(entities, { representations });
    const second = await query(entities, { representations });
    expect(first.errors).toBeUndefined();
    expect(second).toEqual(first);
    const [user, location, shift] = first.data?.['_entities'] as any[];
    expect(user).toEqual({ id: 'usr_7Hq2', name: expect.any(String), role: expect.any(String), email: expect.stringContaining('@') });
    expect(location).toEqual({ id: 'loc_harbour', headcount: expect.any(Number), manager: { id: expect.stringMatching(/^usr_/), name: expect.any(String) } });
    expect(shift.id).toBe('shf_0001');
  });

  it('pages through people with Relay cursors', async () => {
    const page = `query ($after: String) { people(first: 40, after: $after) { nodes { id } pageInfo { hasNextPage hasPreviousPage endCursor } } }`;
    const one = (await query(page)).data?.['people'];
    expect(one.nodes).toHaveLength(40);
    expect(one.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const two = (await query(page, { after: one.pageInfo.endCursor })).data?.['people'];
    expect(two.nodes.length).toBeGreaterThan(0);
    expect(two.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    expect(two.nodes[0].id).not.toBe(one.nodes[39].id);
  });

  it('refuses a page size outside 1 to 100, and a cursor it did not issue', async () => {
    for (const first of [0, 101]) {
      const result = await query('query ($first: Int) { people(first: $first) { nodes { id } } }', { first });
      expect(result.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
    const forged = await query('{ people(after: "bm9wZQ") { nodes { id } } }');
    expect(forged.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
