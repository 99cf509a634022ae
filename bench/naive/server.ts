/**
 * The "naive" baseline: the GraphQL server a team writes in an afternoon, with the
 * same schema.graphql and the same upstream, and none of the product's machinery.
 *
 * - A token per GraphQL request (fetched once per request, on first use): no token cache.
 * - `Shift.location` fetches the locations list for every shift (N+1): no DataLoader.
 * - `_entities` / `location(id)` scan the list from the start for each reference.
 * - Connections map `first`/`after` onto `page_size`/`next` one to one.
 *
 * With `lean` (the bench's `apollo` target, BENCH_NAIVE_LEAN=1) it is instead the least
 * Apollo Server does for the same answer: the token cached per company for good, and
 * Apollo's built-in plugins that hook every field or report (cache control, inline
 * trace, usage and schema reporting, landing page) switched off, as the product does.
 * What is left is Apollo Server, @apollo/subgraph and undici: the cost any subgraph on
 * Apollo Server pays before doing anything of its own.
 *
 * It is honest, not sabotaged: undici with keep-alive for every upstream call, one
 * Apollo Server with @apollo/subgraph, no artificial waits. It does not validate what
 * the product validates (page references, api_base, record shapes), which only makes
 * it cheaper.
 *
 * Run as a process: PORT, HOST, WFS_AUTH_URL and WFS_TENANTS_FILE as for the product.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema, type GraphQLResolverMap } from '@apollo/subgraph';
import { GraphQLError } from 'graphql';
import { gql } from 'graphql-tag';
import { Agent, request } from 'undici';
import { builtInPluginsOff } from '../../src/graphql/server/plugins';
import { childSettings, serveAsChild } from '../child';
import { repoRoot } from '../settings';

interface TenantEntry {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  scope: string;
}

interface Session {
  accessToken: string;
  apiBase: string;
}

interface Envelope {
  data: Array<Record<string, any>>;
  has_more: boolean;
  next: string | null;
}

interface Context {
  tenant: TenantEntry;
  /** The request's token, fetched on first use (once per GraphQL request). */
  session(): Promise<Session>;
}

export interface NaiveServerOptions {
  authUrl: string;
  tenants: TenantEntry[];
  port: number;
  host: string;
  /** The least Apollo Server does: one token per company, kept; Apollo's per-field and reporting plugins off. */
  lean?: boolean;
}

const LOCATIONS = '/api/public/v1/locations/';
const SHIFTS = '/api/public/v1/shifts/';

export async function startNaiveServer(options: NaiveServerOptions): Promise<{ url: string; stop(): Promise<void> }> {
  const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });

  async function getToken(tenant: TenantEntry): Promise<Session> {
    const res = await request(`${options.authUrl}/identity/o/api/token`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: tenant.clientId, client_secret: tenant.clientSecret, scope: tenant.scope }).toString(),
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new GraphQLError(`token request failed: ${res.statusCode}`, { extensions: { code: 'UPSTREAM_UNAUTHORIZED' } });
    }
    const body = (await res.body.json()) as { access_token: string };
    const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1]!, 'base64url').toString());
    return { accessToken: body.access_token, apiBase: claims.api_base };
  }

  async function getPage(ctx: Context, path: string, pageSize: number, after: string | null): Promise<Envelope> {
    const { accessToken, apiBase } = await ctx.session();
    let url: URL;
    if (after && (after.includes('/') || after.startsWith('?'))) url = new URL(after, new URL(path, apiBase));
    else {
      url = new URL(path, apiBase);
      if (after) url.searchParams.set('cursor', after);
    }
    if (!url.searchParams.has('page_size')) url.searchParams.set('page_size', String(pageSize));
    const res = await request(url, { dispatcher: agent, headers: { authorization: `Bearer ${accessToken}` } });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new GraphQLError(`upstream answered ${res.statusCode}`, { extensions: { code: res.statusCode === 403 ? 'FORBIDDEN' : 'UPSTREAM_BAD_RESPONSE' } });
    }
    return (await res.body.json()) as Envelope;
  }

  /** Walks the list from the start until it finds the id. */
  async function findById(ctx: Context, path: string, id: string): Promise<Record<string, any> | null> {
    let after: string | null = null;
    for (;;) {
      const page: Envelope = await getPage(ctx, path, 100, after);
      const found = page.data.find((item) => String(item.id) === id);
      if (found) return found;
      if (!page.has_more || !page.next) return null;
      after = page.next;
    }
  }

  async function connection(ctx: Context, path: string, args: { first?: number | null; after?: string | null }, map: (item: Record<string, any>) => unknown) {
    const after = args.after ? Buffer.from(args.after, 'base64url').toString() : null;
    const page = await getPage(ctx, path, args.first ?? 100, after);
    const endCursor = page.next ? Buffer.from(page.next).toString('base64url') : null;
    const edges = page.data.map((item) => ({ cursor: Buffer.from(String(item.id)).toString('base64url'), node: map(item) }));
    return {
      edges,
      nodes: edges.map((edge) => edge.node),
      pageInfo: { hasNextPage: page.has_more, hasPreviousPage: Boolean(after), startCursor: edges[0]?.cursor ?? null, endCursor },
    };
  }

  const toLocation = (item: Record<string, any>) => ({ id: String(item.id), name: item.name });
  const toShift = (item: Record<string, any>) => ({
    id: String(item.id),
    start: item.start ?? null,
    end: item.end ?? null,
    locationId: typeof item.location === 'object' && item.location ? item.location.id : item.location,
    userId: typeof item.user === 'object' && item.user ? item.user.id : item.user,
  });

  const resolvers = {
    Query: {
      locations: (_: unknown, args: { first?: number; after?: string }, ctx: Context) => connection(ctx, LOCATIONS, args, toLocation),
      shifts: (_: unknown, args: { first?: number; after?: string }, ctx: Context) => connection(ctx, SHIFTS, args, toShift),
      location: async (_: unknown, { id }: { id: string }, ctx: Context) => {
        const found = await findById(ctx, LOCATIONS, id);
        return found ? toLocation(found) : null;
      },
      shift: async (_: unknown, { id }: { id: string }, ctx: Context) => {
        const found = await findById(ctx, SHIFTS, id);
        return found ? toShift(found) : null;
      },
    },
    Location: {
      __resolveReference: async ({ id }: { id: string }, ctx: Context) => {
        const found = await findById(ctx, LOCATIONS, id);
        return found ? toLocation(found) : null;
      },
    },
    Shift: {
      __resolveReference: async ({ id }: { id: string }, ctx: Context) => {
        const found = await findById(ctx, SHIFTS, id);
        return found ? toShift(found) : null;
      },
      location: async (shift: { locationId?: string }, _: unknown, ctx: Context) => {
        if (!shift.locationId) return null;
        const found = await findById(ctx, LOCATIONS, shift.locationId);
        return found ? toLocation(found) : null;
      },
      user: (shift: { userId?: string }) => (shift.userId ? { id: shift.userId } : null),
    },
  };

  const typeDefs = gql(readFileSync(join(repoRoot(), 'schema.graphql'), 'utf8'));
  const plugins = options.lean ? builtInPluginsOff() : [];
  const server = new ApolloServer<Context>({ schema: buildSubgraphSchema([{ typeDefs, resolvers: resolvers as unknown as GraphQLResolverMap<unknown> }]), plugins });
  // Lean: a company's token, fetched once and kept for the run (the bench's tokens outlive it).
  const sessions = new Map<string, Promise<Session>>();
  const { url } = await startStandaloneServer(server, {
    listen: { port: options.port, host: options.host },
    context: async ({ req }) => {
      const tenantId = req.headers['x-tenant-id'];
      const tenant = options.tenants.find((t) => t.tenantId === tenantId);
      if (!tenant) throw new GraphQLError('unknown tenant', { extensions: { code: 'FORBIDDEN', http: { status: 403 } } });
      let session: Promise<Session> | undefined;
      const perRequest = () => (session ??= getToken(tenant));
      const perCompany = () => {
        let kept = sessions.get(tenant.tenantId);
        if (!kept) sessions.set(tenant.tenantId, (kept = getToken(tenant)));
        return kept;
      };
      return { tenant, session: options.lean ? perCompany : perRequest };
    },
  });
  return {
    url,
    async stop() {
      await server.stop();
      await agent.close();
    },
  };
}

if (require.main === module) {
  const lean = process.env.BENCH_NAIVE_LEAN === '1';
  serveAsChild(lean ? 'apollo server' : 'naive server', startNaiveServer({ ...childSettings<TenantEntry>(4002), lean }));
}
