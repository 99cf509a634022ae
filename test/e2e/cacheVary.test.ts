import { Agent, interceptors, request, type Dispatcher } from 'undici';
import { makeTenant, startEmulator, type Emulator } from '../../tools/emulator';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { startTestIdentityProvider, type TestIdentityProvider } from '../helpers/jwks';
import { emulatorEnv } from '../helpers/postGraphQL';

/**
 * Every edge of the cache's one decision (docs/caching.md, "The contract"), against the
 * built server as deployed: an answer a cache may keep says in `Vary` what decides whose
 * it is (the tenant header in trusted-header mode, renamed or not; `Authorization` with
 * verified identities), on a POST, on a GET and on an answer kept whole; and a standard
 * HTTP cache that honours it (undici's private cache, `interceptors.cache`) gives two
 * companies behind one client their own answers.
 */

const QUERY = '{ locations(first: 3) { nodes { id name } } }';
const A = makeTenant({ tenantId: 'vary-a', name: 'Alpha', locationCount: 3, shiftCount: 0 });
const B = makeTenant({ tenantId: 'vary-b', name: 'Bravo', locationCount: 3, shiftCount: 0 });

let emulator: Emulator;
let idp: TestIdentityProvider;
const servers: BuiltServer[] = [];

/** A built server on the emulator with a 30 s window, and `env`. */
async function serve(env: Record<string, string>): Promise<string> {
  const server = await startBuiltServer({ ...emulatorEnv(emulator), WFS_FRESHNESS_SECONDS: '30', ...env });
  servers.push(server);
  return server.url;
}

interface Answer {
  readonly cacheControl: string | undefined;
  readonly vary: string | undefined;
  readonly age: string | undefined;
  readonly names: string[];
}

/** One query, POSTed or as a GET, through `dispatcher` (a cache, or none). */
async function ask(url: string, method: 'POST' | 'GET', headers: Record<string, string>, dispatcher?: Dispatcher): Promise<Answer> {
  const target = method === 'GET' ? `${url}?query=${encodeURIComponent(QUERY)}` : url;
  const response = await request(target, {
    method,
    // A GET says it is no simple request (Apollo Server's CSRF prevention).
    headers: method === 'GET' ? { 'apollo-require-preflight': 'true', ...headers } : { 'content-type': 'application/json', ...headers },
    ...(method === 'POST' && { body: JSON.stringify({ query: QUERY }) }),
    ...(dispatcher && { dispatcher }),
  });
  const body = (await response.body.json()) as { data?: { locations: { nodes: Array<{ name: string }> } }; errors?: unknown };
  expect(body.errors).toBeUndefined();
  const header = (name: string) => {
    const value = response.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return { cacheControl: header('cache-control'), vary: header('vary'), age: header('age'), names: body.data!.locations.nodes.map((node) => node.name) };
}

beforeAll(async () => {
  [emulator, idp] = await Promise.all([startEmulator({ tenants: [A, B] }), startTestIdentityProvider()]);
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await Promise.all([emulator?.close(), idp?.close()]);
});

describe.each([
  ['trusted-header mode', {}, 'x-tenant-id', async (tenantId: string) => ({ 'x-tenant-id': tenantId })],
  ['a renamed tenant header (WFS_TENANT_HEADER=x-company)', { WFS_TENANT_HEADER: 'x-company' }, 'x-company', async (tenantId: string) => ({ 'x-company': tenantId })],
  ['verified identities (WFS_JWKS_URL)', 'jwt', 'authorization', async (tenantId: string) => ({ authorization: `Bearer ${await idp.sign({ tenant_id: tenantId })}` })],
] as const)('%s', (_mode, env, vary, identity) => {
  let url: string;
  beforeAll(async () => {
    url = await serve(env === 'jwt' ? idp.env : env);
  });

  it(`says Vary: ${vary} on every answer a cache may keep: a POST, the same answered whole, a GET`, async () => {
    const headers = await identity(A.tenantId);
    // Asked three times: executed, kept whole (asked twice), answered whole.
    const answers = [await ask(url, 'POST', headers), await ask(url, 'POST', headers), await ask(url, 'POST', headers), await ask(url, 'GET', headers)];
    for (const answer of answers) {
      expect(answer.cacheControl).toMatch(/^private, max-age=\d+$/);
      expect(answer.vary?.toLowerCase()).toBe(vary);
      expect(answer.names[0]).toMatch(/^Alpha/);
    }
  });

  it("gives two companies behind one client with undici's private HTTP cache their own answers", async () => {
    const cached = new Agent().compose(interceptors.cache({ type: 'private', methods: ['GET'] }));
    try {
      const [a, b] = [await identity(A.tenantId), await identity(B.tenantId)];
      const first = await ask(url, 'GET', a, cached);
      // The control: the cache keeps the answer (the second asking is its copy, with an
      // `age`). Not one asked with `Authorization`: undici stores none that is not
      // `public` (RFC 9111, 3.5), so with verified identities each asking goes through.
      const again = await ask(url, 'GET', a, cached);
      expect([first.age, again.age !== undefined]).toEqual([undefined, env !== 'jwt']);
      expect(again.names).toEqual(first.names);
      const other = await ask(url, 'GET', b, cached);
      expect(other.names[0]).toMatch(/^Bravo/);
      expect(other.age).toBeUndefined();
      expect((await ask(url, 'GET', a, cached)).names[0]).toMatch(/^Alpha/);
    } finally {
      await cached.close();
    }
  });
});
