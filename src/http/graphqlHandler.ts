/**
 * Apollo Server's documented integration path, as one function a request runs through
 * from top to bottom once the bounds let it in (http/requestBounds.ts, `boundRequests`):
 * parse the body, build the request's context, execute (sharing an identical request's
 * execution), write the answer.
 */
import type { IncomingMessage } from 'node:http';
import { HeaderMap, type ApolloServer } from '@apollo/server';
import { createContext, type ContextServices, type GraphQLContext } from '../graphql/data/context';
import type { AdmittedHandler } from './requestBounds';
import { sendGraphQLError } from './respond';
import type { SharedRequests } from './sharedRequests';

export interface GraphQLHandlerOptions {
  readonly apollo: ApolloServer<GraphQLContext>;
  readonly services: ContextServices;
  /** Identical requests in flight share one execution (its plugin must be among Apollo's). */
  readonly sharing?: SharedRequests;
}

/** The GraphQL handler the request bounds wrap. */
export function createGraphQLHandler(options: GraphQLHandlerOptions): AdmittedHandler {
  const { apollo, services, sharing } = options;
  return async function handle(req, res, { text, signal }, record) {
    let body: unknown;
    if (text !== null) {
      if ((req.headers['content-type'] ?? '').includes('application/json')) {
        try {
          body = text === '' ? {} : JSON.parse(text);
        } catch {
          return sendGraphQLError(res, 400, 'BAD_REQUEST', 'the request body is not valid JSON');
        }
      } else body = text;
    }
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const context = createContext(services, req.headers, signal, record);
    const shared = sharing && text !== null && query === -1 && typeof body === 'object' && !Array.isArray(body) ? await sharing.begin(context, text, req.headers) : undefined;
    let response;
    try {
      response = await apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: req.method ?? 'GET', headers: headerMap(req), search: query === -1 ? '' : url.slice(query), body },
        context: async () => context,
      });
    } finally {
      shared?.();
      // The answer is worked out (unless it comes in parts, below): the request's data lets go.
      if (response?.body.kind !== 'chunked') context.release();
    }

    const headers: Record<string, string> = {};
    for (const [name, value] of response.headers) headers[name] = value;
    if (response.body.kind === 'complete') {
      // With its length the answer goes out as one write; without it, node:http frames it
      // as chunked (headers, chunk size, body, terminator: a writev of four buffers).
      const text = response.body.string;
      headers['content-length'] = String(Buffer.byteLength(text));
      res.writeHead(response.status ?? 200, headers);
      res.end(text);
      return;
    }
    try {
      res.writeHead(response.status ?? 200, headers);
      for await (const chunk of response.body.asyncIterator) res.write(chunk);
      res.end();
    } finally {
      context.release();
    }
  };
}

/** The request's headers as Apollo's HeaderMap (lower-case names, repeated values joined). */
function headerMap(req: IncomingMessage): HeaderMap {
  const headers = new HeaderMap();
  const source = req.headers;
  for (const name in source) {
    const value = source[name];
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}
