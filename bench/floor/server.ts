/**
 * The reference servers the bench measures the subgraph against: the least work a
 * Node GraphQL server over this upstream can do. Run as a process:
 *
 *   BENCH_FLOOR_MODE=graphql  "floor": node:http + undici + graphql-js executing a
 *                             document parsed and validated once (cached by its text),
 *                             a token fetched once per tenant and kept. Nothing else:
 *                             no Apollo Server, no plugins, no limits, no metrics, no
 *                             cursors, no validation of the upstream's answer.
 *   BENCH_FLOOR_KEEP_MS=5000  "floor-f5": the floor serving a page it read within that many
 *                             ms again from memory (by tenant, size and reference), as the
 *                             subgraph's window does: the least a Node GraphQL server pays
 *                             for an answer from kept pages (the cache scenarios).
 *   BENCH_FLOOR_MODE=proxy    "proxy": no GraphQL at all. It reads and parses the JSON
 *                             body, calls the upstream once and writes the same answer
 *                             shape: the cost of the HTTP hop and JSON alone.
 *
 * Both serve only `locations(first: N) { nodes { id name } }` (the floor rows of the
 * table; the floor also `after:` and `pageInfo`, for the no-sharing rows); PORT, HOST, WFS_AUTH_URL and WFS_TENANTS_FILE as for the product.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, execute, parse, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import { Agent } from 'undici';
import { childSettings, serveAsChild } from '../child';
import { DirectClient, LOCATIONS_PATH, type RestCredentials, type UpstreamLocation } from '../rest';

const SDL = `
type Query { locations(first: Int = 100, after: String): LocationConnection }
type LocationConnection { nodes: [Location!]! pageInfo: PageInfo! }
type PageInfo { hasNextPage: Boolean! endCursor: String }
type Location { id: ID! name: String! }
`;

interface Context {
  readonly tenant: RestCredentials;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(text);
}

export async function startFloorServer(options: { mode: 'graphql' | 'proxy'; authUrl: string; tenants: RestCredentials[]; port: number; host: string; keepMs?: number }) {
  const agent = new Agent({ connections: 64, pipelining: 1, keepAliveTimeout: 30_000 });
  const upstream = new DirectClient(options.authUrl, agent);
  const tenants = new Map(options.tenants.map((tenant) => [tenant.tenantId, tenant]));
  const schema: GraphQLSchema = buildSchema(SDL);
  const documents = new Map<string, DocumentNode>();
  const keepMs = options.keepMs ?? 0;
  /** Pages read within `keepMs`, by tenant, size and reference (floor-f5), with when they were asked for. */
  const kept = new Map<string, { readonly at: number; readonly page: ReturnType<typeof upstream.page<UpstreamLocation>> }>();
  const read = (tenant: RestCredentials, first: number, after: string | null) => {
    if (keepMs <= 0) return upstream.page<UpstreamLocation>(tenant, LOCATIONS_PATH, first, after);
    const key = `${tenant.tenantId}\u0000${first}\u0000${after ?? ''}`;
    const now = Date.now();
    const held = kept.get(key);
    if (held && now - held.at < keepMs) return held.page;
    const page = upstream.page<UpstreamLocation>(tenant, LOCATIONS_PATH, first, after);
    kept.set(key, { at: now, page });
    page.catch(() => kept.delete(key));
    return page;
  };
  const rootValue = {
    // The cursor is the upstream's own page reference (no signing, no checks: the floor).
    locations: async ({ first, after }: { first: number; after?: string | null }, context: Context) => {
      const page = await read(context.tenant, first, after ?? null);
      return { nodes: page.data.slice(0, first), pageInfo: { hasNextPage: page.has_more, endCursor: page.next } };
    },
  };

  const graphql = async (req: IncomingMessage, res: ServerResponse, tenant: RestCredentials) => {
    const body = JSON.parse(await readBody(req)) as { query: string; variables?: Record<string, unknown> };
    let document = documents.get(body.query);
    if (!document) {
      document = parse(body.query);
      const errors = validate(schema, document);
      if (errors.length > 0) return send(res, 400, JSON.stringify({ errors }));
      documents.set(body.query, document);
    }
    const result = await execute({ schema, document, rootValue, contextValue: { tenant }, variableValues: body.variables });
    send(res, 200, JSON.stringify(result));
  };

  const proxy = async (req: IncomingMessage, res: ServerResponse, tenant: RestCredentials) => {
    JSON.parse(await readBody(req));
    const page = await upstream.page<UpstreamLocation>(tenant, LOCATIONS_PATH, 100, null);
    send(res, 200, JSON.stringify({ data: { locations: { nodes: page.data.map((item) => ({ id: String(item.id), name: item.name })) } } }));
  };

  const handle = options.mode === 'graphql' ? graphql : proxy;
  const server = createServer((req, res) => {
    const tenant = tenants.get(String(req.headers['x-tenant-id']));
    if (!tenant) return send(res, 403, '{"errors":[{"message":"unknown tenant"}]}');
    handle(req, res, tenant).catch((error: unknown) => send(res, 500, JSON.stringify({ errors: [{ message: String(error) }] })));
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  return {
    url: `http://${options.host}:${(server.address() as AddressInfo).port}/graphql`,
    async stop() {
      server.close();
      await agent.close();
    },
  };
}

if (require.main === module) {
  const mode = process.env.BENCH_FLOOR_MODE === 'proxy' ? 'proxy' : 'graphql';
  const keepMs = Number(process.env.BENCH_FLOOR_KEEP_MS ?? 0);
  serveAsChild(`floor server (${mode}${keepMs > 0 ? `, pages kept ${keepMs} ms` : ''})`, startFloorServer({ mode, keepMs, ...childSettings<RestCredentials>(4003) }));
}
