/**
 * Subscribe admission, the subscription side of the query path's limits and cost: the
 * graphql-ws hooks (`onConnect`, `onSubscribe`, ...) that the WebSocket transport
 * (http/liveSocket.ts) is given at wiring. Identity as for queries (same resolver:
 * router secret, trusted header, verified JWT, demo default), from the upgrade
 * request's headers completed by `connection_init`'s; checked when the connection is
 * initialised, again at each subscribe (at most once a second per connection), and on
 * every open subscription every `identityRecheckMs` (a JWT past `exp`, a key withdrawn:
 * its subscriptions end with UNAUTHENTICATED). A subscribe document meets the query
 * limits (tokens, depth, aliases, directives, fields) and the cost bound of queries;
 * its parse, validation and cost estimate are kept per document text. Bounded:
 * subscriptions per connection, new subscriptions per company and second, refused
 * subscribes per connection.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { GraphQLError, Kind, getOperationAST, parse, specifiedRules, subscribe, validate, type DocumentNode, type ExecutionArgs, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import type { Context, ServerOptions, SubscribePayload } from 'graphql-ws';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { LiveHub } from '../../live/hub';
import { digest, sameSecret } from '../../routerSecret';
import type { ContextServices } from '../data/context';
import { SubscriptionContext } from '../data/subscriptionContext';
import { CostEstimates, costRefusal } from './cost';
import { createDocumentStore } from './documentStore';
import { LIMIT_ERROR_CODE, isTokenLimitError, limitParseOptions, limitRules, type QueryLimits } from './limits';

export interface SubscribeGateLimits {
  /** Subscriptions open (or being set up) on one connection; past it a subscribe gets an error. */
  readonly subscriptionsPerConnection: number;
  /** Refused subscribes a connection may send; past it, it is closed (1008): a client that keeps asking past a bound is not a screen. */
  readonly refusalsPerConnection: number;
  /** New subscriptions one company may open on a replica within `companySubscribeBurst / companySubscribesPerSecond` seconds; past it a subscribe is refused (SERVICE_UNAVAILABLE). */
  readonly companySubscribeBurst: number;
  readonly companySubscribesPerSecond: number;
  /** How often the identity of a connection with open subscriptions is checked again, in ms (a JWT past `exp`, a key withdrawn). */
  readonly identityRecheckMs: number;
}

export const DEFAULT_SUBSCRIBE_GATE_LIMITS: SubscribeGateLimits = Object.freeze({
  // A gateway multiplexes a company's subscriptions over one connection (Hive Gateway
  // keeps one per caller identity), so this is well above one screen's few.
  subscriptionsPerConnection: 1_000,
  refusalsPerConnection: 100,
  companySubscribeBurst: 1_000,
  companySubscribesPerSecond: 100,
  identityRecheckMs: 30_000,
});

/** What the transport tells the gate of a connection (graphql-ws's `extra`). */
export interface GateExtra {
  /** The upgrade request's headers. */
  readonly headers: IncomingHttpHeaders;
  /** Closes the connection (a client past the refusal bound). */
  close(code: number, reason: string): void;
  /** Its upgrade carried the router secret: a gateway's connection, for its callers. */
  readonly gateway: boolean;
}

export interface SubscribeGateOptions {
  /** The subgraph schema, asked for at the first subscription; one not instrumented by Apollo Server's plugins. */
  readonly schema: () => GraphQLSchema;
  readonly services: ContextServices;
  readonly hub: LiveHub;
  readonly routerSecret: string | null;
  readonly queryLimits: QueryLimits;
  /** The upstream time one change's resolution may use, in ms (a query's budget). */
  readonly budgetMs: number;
  /** Apollo's error formatter (graphql/errors.ts): upstream errors to their codes and client sentences. */
  readonly formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  /** Counts a refusal, by reason (identity, company, connection, document, cost, rate). */
  readonly refused: (reason: string) => void;
  readonly limits?: Partial<SubscribeGateLimits>;
  /** Demo mode: the tenant a connection that names none gets, said in `connection_ack` and each `next` (`demoTenant`). */
  readonly demo?: { readonly tenantHeader: string; readonly defaultTenant: string };
}

/** The graphql-ws hooks of admission, and the gate's own timer to stop. */
export type SubscribeGate = Required<Pick<ServerOptions<Record<string, unknown> | undefined, GateExtra>, 'onConnect' | 'onSubscribe' | 'onNext' | 'onComplete' | 'onClose' | 'subscribe'>> & { close(): void };

/** The execution arguments of a refused subscribe (its errors in `contextValue`): answered by the gate's `subscribe`, not run. */
const REFUSED = Symbol('refused');
const REFUSED_DOCUMENT = parse('subscription Refused { __typename }');

/** At most this many `connection_init` headers are read, each at most this long. */
const MAX_INIT_HEADERS = 50;
const MAX_INIT_HEADER_CHARS = 8_192;
/** A connection's identity, once checked, serves its subscribes for this long (then it is checked again). */
const IDENTITY_RECHECK_MS = 1_000;
/** Parsed and validated subscription documents kept, by the memory they hold (documentStore.ts). */
const DOCUMENT_CACHE_BYTES = 4 * 2 ** 20;

/** What the gate keeps of one connection. */
interface Connection {
  /** The headers identity is read from: the upgrade request's, completed by `connection_init`'s. */
  readonly headers: IncomingHttpHeaders;
  readonly close: GateExtra['close'];
  /** Subscriptions accepted and not completed yet (each has its context here). */
  readonly contexts: Map<string, SubscriptionContext>;
  /** Subscriptions accepted or being checked: taken before the first await, so a burst of subscribes cannot all pass the bound. */
  slots: number;
  /** Subscribes refused so far. */
  refusals: number;
  /** The tenant of the last identity check, and when it was made (or the check under way). */
  identity: { readonly tenantId: Promise<string>; readonly at: number } | undefined;
  /** Demo mode: the tenant the connection was given because it named none. */
  readonly demoTenant: string | undefined;
}

type GateContext = Context<Record<string, unknown> | undefined, GateExtra>;

/** A parsed and validated document, or why it is refused. */
type CheckedDocument = ({ readonly document: DocumentNode } | { readonly errors: readonly GraphQLError[] }) & { readonly rootKey?: string | undefined };

export function createSubscribeGate(options: SubscribeGateOptions): SubscribeGate {
  const limits = { ...DEFAULT_SUBSCRIBE_GATE_LIMITS, ...options.limits };
  const { schema, services } = options;
  const routerSecret = options.routerSecret ? digest(options.routerSecret) : null;
  const connections = new Map<GateContext, Connection>();
  const checkedDocument = createDocumentChecker(schema, options.queryLimits);
  const estimates = new CostEstimates();
  // The burst per the window it takes the steady rate to earn it again (1,000 per 10 s
  // by default): rate-limiter-flexible's fixed windows per company, expiring on their own.
  const companyRate = new RateLimiterMemory({ points: limits.companySubscribeBurst, duration: Math.max(1, limits.companySubscribeBurst / limits.companySubscribesPerSecond) });

  const refuse = (reason: string, code: string, message: string): GraphQLError[] => {
    options.refused(reason);
    return [new GraphQLError(message, { extensions: { code } })];
  };
  // Refusals that say the same every time are made once: a GraphQLError records a stack
  // trace when made, the largest cost of refusing a flood of subscribes.
  const sameRefusals = new Map<string, readonly GraphQLError[]>();
  const refuseAlike = (reason: string, code: string, message: string): readonly GraphQLError[] => {
    options.refused(reason);
    let errors = sameRefusals.get(message);
    if (!errors) sameRefusals.set(message, (errors = Object.freeze([new GraphQLError(message, { extensions: { code } })])));
    return errors;
  };
  const answer = (errors: readonly GraphQLError[], rootKey?: string) => refusalArgs(schema(), errors, rootKey);
  const notInitialised = 'the connection was not initialised';
  const perConnection = `at most ${limits.subscriptionsPerConnection} subscriptions may be open on one connection; complete some, or open another connection`;
  const companyRateExceeded = `your company opened more than ${limits.companySubscribeBurst} subscriptions in a short time on this replica; retry in a moment`;

  const recheck = recheckIdentities(connections, limits.identityRecheckMs, services, options.refused);

  return {
    onConnect: async (ctx) => {
      const headers = identityHeaders(ctx.extra.headers, ctx.connectionParams);
      const problem = await identityProblem(services, routerSecret, headers);
      // A gateway's connection (its upgrade carried the router secret) is kept when its
      // caller's identity is refused: each subscribe is then answered with the refusal
      // (a `next` with the error, then `complete`), which gateways pass on, where a close
      // at `connection_init` reaches their client as silence or "Unexpected error".
      if (problem && !(ctx.extra.gateway && !problem.routerSecret)) {
        options.refused('identity');
        ctx.extra.close(4403, closeReason(`${problem.code}: ${problem.message}`));
        return false;
      }
      const named = options.demo && headers[options.demo.tenantHeader];
      const demoTenant = !problem && options.demo && !(Array.isArray(named) ? named[0] : named)?.trim() ? options.demo.defaultTenant : undefined;
      connections.set(ctx, { headers, close: ctx.extra.close, contexts: new Map(), slots: 0, refusals: 0, identity: undefined, demoTenant });
      return demoTenant ? { demoTenant } : true;
    },
    onSubscribe: async (ctx, id, payload): Promise<ExecutionArgs | readonly GraphQLError[]> => {
      const connection = connections.get(ctx);
      if (!connection) return answer(refuseAlike('identity', 'UNAUTHENTICATED', notInitialised));
      if (connection.slots >= limits.subscriptionsPerConnection) return answer(refuseAlike('connection', 'BAD_REQUEST', perConnection));
      connection.slots += 1;
      const seen: { rootKey?: string } = {};
      const accepted = await checkSubscribe(connection, id, payload, seen);
      if (!Array.isArray(accepted)) return accepted;
      // A refusal gives its slot back at once; an accepted one when it completes (onComplete).
      connection.slots -= 1;
      if (++connection.refusals > limits.refusalsPerConnection) {
        options.refused('rate');
        connection.close(1008, 'too many refused subscriptions');
      }
      return answer(accepted, seen.rootKey);
    },
    // A refusal is the operation's one result (a `next` with the errors, then
    // `complete`), as a resolver's error is: the shape gateways pass on to their clients.
    subscribe: (args) => (args.rootValue === REFUSED ? { errors: args.contextValue as readonly GraphQLError[] } : subscribe(args)),
    onNext: (ctx, _id, _payload, _args, result) => {
      const demoTenant = connections.get(ctx)?.demoTenant;
      if (!result.errors && !demoTenant) return undefined;
      const { errors, ...rest } = result;
      return {
        ...rest,
        ...(errors && { errors: errors.map((error) => options.formatError(error.toJSON(), error)) }),
        ...(demoTenant && { extensions: { ...rest.extensions, demoTenant } }),
      };
    },
    onComplete: (ctx, id) => {
      const connection = connections.get(ctx);
      const context = connection?.contexts.get(id);
      if (!connection || !context) return;
      context.close();
      connection.contexts.delete(id);
      connection.slots -= 1;
    },
    onClose: (ctx) => {
      const connection = connections.get(ctx);
      if (!connection) return;
      connections.delete(ctx);
      for (const context of connection.contexts.values()) context.close();
      connection.contexts.clear();
      connection.slots = 0;
    },
    close: () => clearInterval(recheck),
  };

  /** The checks of a subscribe after the connection's bound: identity, document, limits, cost; its execution arguments, or why not. */
  async function checkSubscribe(connection: Connection, id: string, payload: SubscribePayload, seen: { rootKey?: string }): Promise<ExecutionArgs | readonly GraphQLError[]> {
    if (typeof payload.query !== 'string') return refuseAlike('document', 'BAD_REQUEST', 'the subscribe payload has no query');
    const checked = await checkedDocument(payload.query);
    if (checked.rootKey) seen.rootKey = checked.rootKey;
    if ('errors' in checked) {
      options.refused('document');
      return checked.errors;
    }
    const { document } = checked;
    // graphql-ws keeps the subscribe's payload for the subscription's life; its text is
    // not needed once parsed (the document is kept per text), so it is let go of here.
    (payload as { query: string }).query = '';
    let tenantId: string;
    try {
      tenantId = await identityOf(services, connection);
    } catch (error) {
      const { code, message } = errorOf(error);
      return refuse('identity', code, message);
    }
    const withinRate = await companyRate.consume(tenantId).then(() => true, () => false);
    if (!withinRate) return refuseAlike('company', 'SERVICE_UNAVAILABLE', companyRateExceeded);
    const operation = getOperationAST(document, payload.operationName);
    if (!operation) return refuse('document', 'BAD_REQUEST', 'the document has no operation of that name (name one with operationName)');
    if (operation.operation !== 'subscription') {
      return refuse('document', 'BAD_REQUEST', `only subscriptions are served over WebSocket; send ${operation.operation === 'query' ? 'queries' : 'mutations'} over HTTP POST to this path`);
    }
    const variables = payload.variables ?? {};
    const overBudget = costRefusal(operation, estimates.of(schema(), document, operation, variables), options.queryLimits.maxCost);
    if (overBudget) {
      options.refused('cost');
      return [overBudget];
    }
    const context = new SubscriptionContext(services, connection.headers, tenantId, options.budgetMs, {
      hub: options.hub,
    });
    connection.contexts.get(id)?.close();
    connection.contexts.set(id, context);
    return { schema: schema(), document, operationName: payload.operationName ?? null, variableValues: variables, contextValue: context };
  }

}


/**
 * The execution arguments of a refused subscribe: its errors become the operation's one
 * result (the gate's `subscribe`), with the path of the subscription's field when the
 * document names one, as a resolver's error has; gateways map a subgraph's error onto
 * their client's field by that path.
 */
function refusalArgs(schema: GraphQLSchema, errors: readonly GraphQLError[], rootKey: string | undefined): ExecutionArgs {
  const located = rootKey ? errors.map((error) => new GraphQLError(error.message, { nodes: error.nodes ?? null, path: [rootKey], extensions: error.extensions })) : errors;
  return { schema, document: REFUSED_DOCUMENT, rootValue: REFUSED, contextValue: located };
}

/**
 * Open subscriptions see their identity checked again every `everyMs`: one that lapsed
 * (a JWT past `exp`, a key withdrawn from the JWKS, a tenant no longer configured) ends
 * them with its error.
 */
function recheckIdentities(connections: ReadonlyMap<unknown, Connection>, everyMs: number, services: ContextServices, refused: (reason: string) => void): NodeJS.Timeout {
  const timer = setInterval(() => {
    for (const connection of connections.values()) {
      if (connection.contexts.size === 0) continue;
      connection.identity = undefined;
      identityOf(services, connection).catch((error: unknown) => {
        const { code, message } = errorOf(error);
        refused('identity');
        const lapsed = new GraphQLError(message, { extensions: { code } });
        for (const context of connection.contexts.values()) context.end(lapsed);
      });
    }
  }, everyMs);
  timer.unref();
  return timer;
}

/**
 * The connection's tenant: checked again once IDENTITY_RECHECK_MS have passed since the
 * last check (a token that expired, a tenant no longer configured), shared by the
 * subscribes that arrive meanwhile. A failed check is not kept.
 */
function identityOf(services: ContextServices, connection: Connection): Promise<string> {
  const now = performance.now();
  if (connection.identity && now - connection.identity.at < IDENTITY_RECHECK_MS) return connection.identity.tenantId;
  const tenantId = services.identify(connection.headers);
  const identity = (connection.identity = { tenantId, at: now });
  tenantId.catch(() => {
    if (connection.identity === identity) connection.identity = undefined;
  });
  return tenantId;
}

/**
 * A subscribe document parsed and validated once per text (by its SHA-256, as Apollo
 * Server keys its document store), within DOCUMENT_CACHE_BYTES; a refused one is
 * worked out each time (a refusal counts against its connection, which is closed
 * past `refusalsPerConnection`).
 */
function createDocumentChecker(schema: () => GraphQLSchema, queryLimits: QueryLimits): (query: string) => Promise<CheckedDocument> {
  const parseOptions = limitParseOptions(queryLimits);
  const rules = [...specifiedRules, ...limitRules(queryLimits)];
  const documents = createDocumentStore(DOCUMENT_CACHE_BYTES);
  return async (query) => {
    const key = createHash('sha256').update(query).digest('hex');
    const known = await documents.get(key);
    if (known) return { document: known, rootKey: rootKeyOf(known) };
    let document: DocumentNode;
    try {
      document = parse(query, parseOptions);
    } catch (error) {
      const message = (error as Error).message;
      const tokens = isTokenLimitError(message);
      return { errors: [new GraphQLError(tokens ? message.replace(/^Syntax Error: /, '') : message, { extensions: { code: tokens ? LIMIT_ERROR_CODE : 'GRAPHQL_PARSE_FAILED' } })] };
    }
    const invalid = validate(schema(), document, rules);
    const rootKey = rootKeyOf(document);
    if (invalid.length > 0) {
      return { rootKey, errors: invalid.map((error) => new GraphQLError(error.message, { nodes: error.nodes ?? null, extensions: { code: LIMIT_ERROR_CODE, ...error.extensions } })) };
    }
    await documents.set(key, document);
    return { document, rootKey };
  };
}

/** The response key of the first field of the document's first operation (what a refusal's path names), if it names one. */
function rootKeyOf(document: DocumentNode): string | undefined {
  const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  const field = operation?.selectionSet.selections.find((selection) => selection.kind === Kind.FIELD);
  return field ? (field.alias ?? field.name).value : undefined;
}

async function identityProblem(services: ContextServices, routerSecret: Buffer | null, headers: IncomingHttpHeaders): Promise<{ code: string; message: string; routerSecret?: true } | undefined> {
  if (routerSecret && !sameSecret(headers['router-authorization'], routerSecret)) {
    return { code: 'UNAUTHENTICATED', message: 'this subgraph only answers the router: router-authorization is missing or wrong', routerSecret: true };
  }
  try {
    await services.identify(headers);
    return undefined;
  } catch (error) {
    return errorOf(error);
  }
}

/**
 * The upgrade request's headers, completed by the `connection_init` payload's for the
 * names the upgrade did not carry (a browser's WebSocket cannot set headers; a gateway
 * forwards them there). The payload's headers are read in either shape clients use:
 * `{ headers: { 'x-tenant-id': … } }` (this subgraph's, graphql-ws links) or flat,
 * `{ 'x-tenant-id': … }` (Hive Gateway's); the nested ones first. Names are
 * lower-cased; only string values are read, and only so many.
 */
export function identityHeaders(upgrade: IncomingHttpHeaders, params: Readonly<Record<string, unknown>> | undefined): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...upgrade };
  if (!params) return headers;
  const nested = params.headers;
  const entries = [...(typeof nested === 'object' && nested !== null && !Array.isArray(nested) ? Object.entries(nested) : []), ...Object.entries(params)];
  let read = 0;
  for (const [name, value] of entries) {
    if (++read > MAX_INIT_HEADERS) break;
    if (typeof value !== 'string' || value.length > MAX_INIT_HEADER_CHARS || name.length > 256) continue;
    const lower = name.toLowerCase();
    if (headers[lower] === undefined) headers[lower] = value;
  }
  return headers;
}

function errorOf(error: unknown): { code: string; message: string } {
  if (error instanceof GraphQLError && typeof error.extensions.code === 'string') return { code: error.extensions.code, message: error.message };
  return { code: 'UNAUTHENTICATED', message: 'the identity could not be checked' };
}

/** A WebSocket close reason is at most 123 bytes. */
function closeReason(text: string): string {
  let reason = text;
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -2);
  return reason;
}
