/**
 * Apollo Server's documented integration path, as one function a request runs through
 * from top to bottom once the bounds let it in (http/requestBounds.ts, `boundRequests`):
 * parse the body, build the request's context, answer whole from memory if an identical
 * request's answer is kept (cache/answers.ts), else execute (sharing an identical
 * request's execution), write the answer, and offer it to the store, which keeps it if
 * the cache policy's decision says so (cache/policy.ts).
 */
import type { IncomingMessage } from 'node:http';
import { HeaderMap, type ApolloServer } from '@apollo/server';
import { createContext, type ContextServices, type GraphQLContext } from '../graphql/data/context';
import type { WholeAnswers } from '../cache/answers';
import { bodyDigest, type CachePolicy } from '../cache/policy';
import type { RequestRecord } from '../upstream/observer';
import type { LiveHttp } from './liveHttp';
import type { AdmittedHandler, AdmittedRequest } from './requestBounds';
import { sendGraphQLError } from './respond';
import type { SharedRequests } from './sharedRequests';

export interface GraphQLHandlerOptions {
  readonly apollo: ApolloServer<GraphQLContext>;
  readonly services: ContextServices;
  /** The cache's decision: which requests are identical (`requestKey`), for sharing and for answers kept whole. */
  readonly policy: CachePolicy;
  /** Identical requests in flight share one execution (its plugin must be among Apollo's). */
  readonly sharing?: SharedRequests;
  /** Answers kept whole, served before Apollo Server runs (the policy's plugin must be among Apollo's). */
  readonly whole?: WholeAnswers;
  /** Counts and logs a request answered whole, as Apollo's plugins do an executed one (observability's `answeredWhole`). */
  readonly answeredWhole?: (record: RequestRecord | undefined, operationName: string | null) => void;
  /** Subscriptions over SSE, multipart or Apollo's callback protocol (liveHttp.ts), served before Apollo Server sees them. */
  readonly live?: LiveHttp;
}

/** The GraphQL handler the request bounds wrap. */
export function createGraphQLHandler(options: GraphQLHandlerOptions): AdmittedHandler {
  const { apollo, services, policy, sharing, whole, answeredWhole, live } = options;
  return async function handle(req, res, admitted, record) {
    const { signal } = admitted;
    const read = readRequestBody(req, admitted);
    if (read === BAD_JSON) return sendGraphQLError(res, 400, 'BAD_REQUEST', 'the request body is not valid JSON');
    const { body, digest } = read;
    // A subscription for a live transport (SSE, multipart, callback) is served by the live side, through the subscribe gate.
    if (live && body !== undefined && (await live(req, res, body, admitted.streaming))) return;
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const context = createContext(services, req.headers, signal, record);
    const key = sharing || whole ? await policy.requestKey(context, { headers: req.headers, digest, search: query !== -1 }) : undefined;
    const hit = whole && key !== undefined ? await whole.lookup(context, key) : undefined;
    if (hit) {
      answeredWhole?.(record, hit.operationName);
      res.writeHead(200, hit.headers);
      res.end(hit.body);
      context.release();
      return;
    }
    const shared = sharing && key !== undefined && !signal.aborted ? sharing.begin(context, key) : undefined;
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
      whole?.keep(context, response.status, headers, text);
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

const BAD_JSON = Symbol('bad JSON');

/**
 * The request's body, parsed (null without one: GET), and for one JSON object the
 * digest of its text that identical requests are known by. The text is taken from
 * `admitted` and let go of here: from then on the request holds its parse only, not
 * the text too, nor a key as long as the text.
 */
function readRequestBody(req: IncomingMessage, admitted: AdmittedRequest): { body: unknown; digest: string | undefined } | typeof BAD_JSON {
  const text = admitted.takeText();
  if (text === null) return { body: undefined, digest: undefined };
  if (!(req.headers['content-type'] ?? '').includes('application/json')) return { body: text, digest: undefined };
  let body: unknown;
  try {
    body = text === '' ? {} : JSON.parse(text);
  } catch {
    return BAD_JSON;
  }
  const single = typeof body === 'object' && body !== null && !Array.isArray(body);
  return { body, digest: single ? bodyDigest(text) : undefined };
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
