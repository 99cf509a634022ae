import { request } from 'undici';
import { loadConfig } from '../../src/config';
import { demoBanner, type Demo } from '../../src/demo';
import { INTROSPECTION_OFF } from '../../src/graphql/server/apolloServer';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * Small things a user trips over: the introspection switch (WFS_INTROSPECTION), a
 * browser opening /graphql, and the demo banner when WFS_ROUTER_SECRET is set.
 */

const INTROSPECTION = '{ __schema { queryType { name } } }';
const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('WFS_INTROSPECTION', () => {
  it('defaults to on, and off with NODE_ENV=production, like the explorer', () => {
    expect(loadConfig({}).introspection).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', WFS_DEMO: 'true' }).introspection).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', WFS_DEMO: 'true', WFS_INTROSPECTION: 'true' }).introspection).toBe(true);
    expect(loadConfig({ WFS_INTROSPECTION: 'off' }).introspection).toBe(false);
    expect(() => loadConfig({ WFS_INTROSPECTION: 'maybe' })).toThrow(/WFS_INTROSPECTION/);
  });

  describe('when off', () => {
    let subgraph: TestSubgraph;
    beforeAll(async () => {
      subgraph = await startTestSubgraph({}, { WFS_INTROSPECTION: 'false', WFS_EXPLORER: 'true' });
    });
    afterAll(async () => {
      await subgraph?.close();
    });

    it('refuses introspection queries, and still answers the router its _service SDL', async () => {
      const tenant = { 'x-tenant-id': subgraph.emulator.tenants[0]!.tenantId };
      const refused = await subgraph.query(INTROSPECTION, {}, tenant);
      expect(refused.status).toBe(400);
      expect(refused.errors?.map((error) => error.extensions?.code)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
      // The operator's switch, not Apollo's constructor option.
      expect(refused.errors?.[0]?.message).toBe(INTROSPECTION_OFF);
      expect(refused.errors?.[0]?.message).toContain('WFS_INTROSPECTION=true');
      expect(JSON.stringify(refused.errors)).not.toMatch(/ApolloServer|introspection: true/);
      const sdl = await subgraph.query('{ _service { sdl } }', {}, tenant);
      expect(sdl.errors).toBeUndefined();
      expect(sdl.data?.['_service']).toEqual({ sdl: expect.stringContaining('type Location') });
    });

    it('says at start-up that the explorer will have no docs or completion', () => {
      expect(subgraph.logs.join('')).toMatch(/explorer is on but introspection is off.*no schema docs and no completion/);
    });
  });

  it('answers introspection when on', async () => {
    const subgraph = await startTestSubgraph({}, { WFS_INTROSPECTION: 'true' });
    try {
      const answer = await subgraph.query(INTROSPECTION, {}, { 'x-tenant-id': subgraph.emulator.tenants[0]!.tenantId });
      expect(answer.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
      expect(subgraph.logs.join('')).not.toMatch(/introspection is off/);
    } finally {
      await subgraph.close();
    }
  });
});

describe('a browser opening /graphql', () => {
  it('is sent to the explorer when it is on', async () => {
    const subgraph = await startTestSubgraph({}, { WFS_EXPLORER: 'true' });
    try {
      const response = await request(subgraph.server.url, { headers: browser });
      await response.body.dump();
      expect(response.statusCode).toBe(302);
      expect(response.headers.location).toBe('/');
      const page = await request(new URL(String(response.headers.location), subgraph.server.url), { headers: browser });
      expect(page.statusCode).toBe(200);
      expect(String(page.headers['content-type'])).toMatch(/text\/html/);
      await page.body.dump();

      // A GET that carries an operation, or asks for JSON, is GraphQL as before.
      const operation = await request(`${subgraph.server.url}?query=${encodeURIComponent('{ __typename }')}`, { headers: { ...browser, 'apollo-require-preflight': 'true' } });
      expect(operation.statusCode).toBe(200);
      expect(await operation.body.json()).toEqual({ data: { __typename: 'Query' } });
      const json = await request(subgraph.server.url, { headers: { accept: 'application/json' } });
      expect(json.statusCode).toBe(400);
      await json.body.dump();
    } finally {
      await subgraph.close();
    }
  });

  it('is not redirected when the explorer is off', async () => {
    const subgraph = await startTestSubgraph({}, { WFS_EXPLORER: 'false' });
    try {
      const response = await request(subgraph.server.url, { headers: browser });
      expect(response.statusCode).toBe(400);
      await response.body.dump();
    } finally {
      await subgraph.close();
    }
  });
});

describe('the demo banner', () => {
  const demo = (env: Record<string, string>): Demo =>
    ({
      emulator: { authUrl: 'http://127.0.0.1:1234', tenants: [{ tenantId: 't-1', name: 'Harbour', grantedScopes: ['shifts.read'] }] },
      config: loadConfig(env),
      defaultTenant: 't-1',
    }) as unknown as Demo;
  const SECRET = 'demo-router-secret-0123456789';

  it('adds the router-authorization header to its curl line when WFS_ROUTER_SECRET is set, without printing the secret', () => {
    const banner = demoBanner(demo({ WFS_ROUTER_SECRET: SECRET }), 'http://localhost:4001/graphql');
    expect(banner).toContain(`-H "router-authorization: $WFS_ROUTER_SECRET"`);
    expect(banner).toMatch(/add the header `router-authorization`.*Headers tab/);
    expect(banner).not.toContain(SECRET);
  });

  it('has no such header without it', () => {
    const banner = demoBanner(demo({}), 'http://localhost:4001/graphql');
    expect(banner).not.toContain('router-authorization');
  });
});
