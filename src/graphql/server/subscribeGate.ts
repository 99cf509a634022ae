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
 * subscribes per connection, and the bytes of variables kept per connection, company
 * and replica.
 *
 * Nothing a client sent is kept beyond need: of `connection_init`, the few headers
 * identity reads (each bounded), the rest dropped before graphql-ws sees it; of a
 * subscribe, the document (kept once per text) and the coerced values of the variables
 * its operation declares. graphql-ws keeps a subscribe's message and its execution
 * arguments for the subscription's life, so what is let go of is taken out of both.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GraphQLError, getOperationAST, getVariableValues, parse, subscribe, type ExecutionArgs, type GraphQLFormattedError, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Context, ServerOptions, SubscribePayload } from 'graphql-ws';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { LiveHub } from '../../live/hub';
import { digest, sameSecret } from '../../routerSecret';
import type { ContextServices } from '../data/context';
import { SubscriptionContext } from '../data/subscriptionContext';
import { closeCodeOf, messageOf, refusal, type RefusalReason } from '../admission/refusals';
import { CostEstimates, costRefusal } from '../admission/cost';
import { createDocumentCheck } from '../admission/document';
import type { QueryLimits } from '../admission/limits';

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
  /**
   * Bytes of variables (the coerced values its operations declare, measured as their
   * JSON text) the open subscriptions of one connection, of one company on the replica,
   * and of the whole replica may keep; a subscribe past one is refused (BAD_USER_INPUT).
   */
  readonly variableBytesPerConnection: number;
  readonly variableBytesPerCompany: number;
  readonly variableBytesPerReplica: number;
}

export const DEFAULT_SUBSCRIBE_GATE_LIMITS: SubscribeGateLimits = Object.freeze({
  // A gateway multiplexes a company's subscriptions over one connection (Hive Gateway
  // keeps one per caller identity), so this is well above one screen's few.
  subscriptionsPerConnection: 1_000,
  refusalsPerConnection: 100,
  companySubscribeBurst: 1_000,
  companySubscribesPerSecond: 100,
  identityRecheckMs: 30_000,
  // A subscription's variables are a filter (an id, two date-times: about 150 bytes),
  // so these leave 1 KiB to each of a connection's 1 000 subscriptions, 800 bytes to
  // each of a company's 5 000 and of the replica's 20 000: 16 MiB of the 256 MiB heap
  // at most, whatever clients send.
  variableBytesPerConnection: 1024 * 1024,
  variableBytesPerCompany: 4 * 1024 * 1024,
  variableBytesPerReplica: 16 * 1024 * 1024,
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
  /** Counts a refusal, by reason (graphql/admission/refusals.ts): the Observer port's `refused`. */
  readonly refused: (reason: RefusalReason) => void;
  readonly limits?: Partial<SubscribeGateLimits>;
  /** Demo mode: the tenant a connection that names none gets, said in `connection_ack` and each `next` (`demoTenant`). */
  readonly demo?: { readonly tenantHeader: string; readonly defaultTenant: string };
  /** The trusted tenant header (WFS_TENANT_HEADER): with `authorization` and `router-authorization`, the only headers identity reads. */
  readonly tenantHeader: string;
}

/**
 * The graphql-ws hooks of admission, the gate's own timer to stop, and what the
 * transport hands graphql-ws of a `connection_init` payload in its place
 * (`connectionParams`): only the headers identity reads.
 */
export type SubscribeGate = Required<Pick<ServerOptions<Record<string, unknown> | undefined, GateExtra>, 'onConnect' | 'onSubscribe' | 'onNext' | 'onComplete' | 'onClose' | 'subscribe'>> & {
  close(): void;
  connectionParams(payload: unknown): Record<string, unknown> | undefined;
};

/** The execution arguments of a refused subscribe (its errors in `contextValue`): answered by the gate's `subscribe`, not run. */
const REFUSED = Symbol('refused');
const REFUSED_DOCUMENT = parse('subscription Refused { __typename }');

/**
 * A `connection_init` header identity reads is at most this long (a JWT with many
 * claims fits); a longer one is not read. With the three names identity reads, a
 * connection keeps at most 24 KiB of its `connection_init`.
 */
const MAX_INIT_HEADER_CHARS = 8_192;
/** A connection's identity, once checked, serves its subscribes for this long (then it is checked again). */
const IDENTITY_RECHECK_MS = 1_000;

/** What the gate keeps of one connection. */
interface Connection {
  /** The headers identity is read from (only those): the upgrade request's, completed by `connection_init`'s. */
  readonly headers: IncomingHttpHeaders;
  readonly close: GateExtra['close'];
  /** Subscriptions accepted and not completed yet (each has its context here). */
  readonly contexts: Map<string, Held>;
  /** Bytes of variables its open subscriptions keep. */
  variableBytes: number;
  /** Subscriptions accepted or being checked: taken before the first await, so a burst of subscribes cannot all pass the bound. */
  slots: number;
  /** Subscribes refused so far. */
  refusals: number;
  /** The tenant of the last identity check, and when it was made (or the check under way). */
  identity: { readonly tenantId: Promise<string>; readonly at: number } | undefined;
  /** Demo mode: the tenant the connection was given because it named none. */
  readonly demoTenant: string | undefined;
}

/** An accepted subscription: its context, and the bytes of variables it keeps, counted against its connection and company. */
interface Held {
  readonly context: SubscriptionContext;
  readonly tenantId: string;
  readonly variableBytes: number;
}

type GateContext = Context<Record<string, unknown> | undefined, GateExtra>;

export function createSubscribeGate(options: SubscribeGateOptions): SubscribeGate {
  const limits = { ...DEFAULT_SUBSCRIBE_GATE_LIMITS, ...options.limits };
  const { schema, services } = options;
  const routerSecret = options.routerSecret ? digest(options.routerSecret) : null;
  const connections = new Map<GateContext, Connection>();
  const checkedDocument = createDocumentCheck(schema, options.queryLimits);
  const estimates = new CostEstimates();
  // The burst per the window it takes the steady rate to earn it again (1,000 per 10 s
  // by default): rate-limiter-flexible's fixed windows per company, expiring on their own.
  const companyRate = new RateLimiterMemory({ points: limits.companySubscribeBurst, duration: Math.max(1, limits.companySubscribeBurst / limits.companySubscribesPerSecond) });

  const refuse = (reason: RefusalReason, message: string, code: string | null = refusal(reason).code): GraphQLError[] => {
    options.refused(reason);
    return [new GraphQLError(message, { extensions: { code } })];
  };
  // Refusals that say the same every time are made once: a GraphQLError records a stack
  // trace when made, the largest cost of refusing a flood of subscribes.
  const sameRefusals = new Map<string, readonly GraphQLError[]>();
  const refuseAlike = (reason: RefusalReason, message: string): readonly GraphQLError[] => {
    options.refused(reason);
    let errors = sameRefusals.get(message);
    if (!errors) sameRefusals.set(message, (errors = Object.freeze([new GraphQLError(message, { extensions: { code: refusal(reason).code } })])));
    return errors;
  };
  const answer = (errors: readonly GraphQLError[], rootKey?: string) => refusalArgs(schema(), errors, rootKey);
  const perConnection = `at most ${limits.subscriptionsPerConnection} subscriptions may be open on one connection; complete some, or open another connection`;
  const companyRateExceeded = `your company opened more than ${limits.companySubscribeBurst} subscriptions in a short time on this replica; retry in a moment`;

  const connectionBytes = `the variables of this connection's open subscriptions may keep at most ${kib(limits.variableBytesPerConnection)}; complete some, send smaller variables, or open another connection`;
  const companyBytes = `the variables of your company's open subscriptions on this replica may keep at most ${kib(limits.variableBytesPerCompany)}; complete some or send smaller variables`;
  const replicaBytes = `the variables of this replica's open subscriptions may keep at most ${kib(limits.variableBytesPerReplica)}; retry in a moment`;
  // Bytes of variables kept by open subscriptions, per company and in all.
  const byCompany = new Map<string, number>();
  let replicaVariableBytes = 0;
  const identityNames = [options.tenantHeader.toLowerCase(), 'authorization', 'router-authorization'];

  const recheck = recheckIdentities(connections, limits.identityRecheckMs, services, options.refused);

  /** Ends the hold of subscription `id` of `connection`: closes its context, gives its slot and bytes back. */
  const release = (connection: Connection, id: string) => {
    const held = connection.contexts.get(id);
    if (!held) return;
    held.context.close();
    connection.contexts.delete(id);
    connection.slots -= 1;
    connection.variableBytes -= held.variableBytes;
    replicaVariableBytes -= held.variableBytes;
    const left = (byCompany.get(held.tenantId) ?? 0) - held.variableBytes;
    if (left > 0) byCompany.set(held.tenantId, left);
    else byCompany.delete(held.tenantId);
  };

  return {
    connectionParams: (payload) => initParams(payload, identityNames),
    onConnect: async (ctx) => {
      const headers = identityHeaders(ctx.extra.headers, ctx.connectionParams, identityNames);
      // Read once: what graphql-ws keeps for the connection's life is not needed again.
      delete (ctx as { connectionParams?: unknown }).connectionParams;
      const problem = await identityProblem(services, routerSecret, headers);
      // A gateway's connection (its upgrade carried the router secret) is kept when its
      // caller's identity is refused: each subscribe is then answered with the refusal
      // (a `next` with the error, then `complete`), which gateways pass on, where a close
      // at `connection_init` reaches their client as silence or "Unexpected error".
      if (problem && !(ctx.extra.gateway && !problem.routerSecret)) {
        options.refused('identity');
        ctx.extra.close(closeCodeOf('identity') ?? 4403, closeReason(`${problem.code}: ${problem.message}`));
        return false;
      }
      const named = options.demo && headers[options.demo.tenantHeader];
      const demoTenant = !problem && options.demo && !(Array.isArray(named) ? named[0] : named)?.trim() ? options.demo.defaultTenant : undefined;
      connections.set(ctx, { headers, close: ctx.extra.close, contexts: new Map(), variableBytes: 0, slots: 0, refusals: 0, identity: undefined, demoTenant });
      return demoTenant ? { demoTenant } : true;
    },
    onSubscribe: async (ctx, id, payload): Promise<ExecutionArgs | readonly GraphQLError[]> => {
      const connection = connections.get(ctx);
      if (!connection) return answer(refuseAlike('not_initialised', messageOf('not_initialised')));
      if (connection.slots >= limits.subscriptionsPerConnection) return answer(refuseAlike('connection', perConnection));
      connection.slots += 1;
      const seen: { rootKey?: string } = {};
      const accepted = await checkSubscribe(connection, id, payload, seen);
      if (!Array.isArray(accepted)) return accepted;
      // A refusal gives its slot back at once; an accepted one when it completes (onComplete).
      connection.slots -= 1;
      if (++connection.refusals > limits.refusalsPerConnection) {
        options.refused('refusals');
        connection.close(closeCodeOf('refusals') ?? 1008, messageOf('refusals'));
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
      if (connection) release(connection, id);
    },
    onClose: (ctx) => {
      const connection = connections.get(ctx);
      if (!connection) return;
      connections.delete(ctx);
      for (const id of [...connection.contexts.keys()]) release(connection, id);
      connection.slots = 0;
    },
    close: () => clearInterval(recheck),
  };

  /** The checks of a subscribe after the connection's bound: identity, document, limits, cost; its execution arguments, or why not. */
  async function checkSubscribe(connection: Connection, id: string, payload: SubscribePayload, seen: { rootKey?: string }): Promise<ExecutionArgs | readonly GraphQLError[]> {
    // graphql-ws keeps the subscribe's payload for the subscription's life: its
    // variables are taken out of it at once (only the coerced values of the declared
    // ones are kept, in the execution arguments), its query text once parsed (the
    // document is kept per text).
    const sent = (payload as { variables?: unknown }).variables;
    delete (payload as { variables?: unknown }).variables;
    if (typeof payload.query !== 'string') return refuseAlike('operation', 'the subscribe payload has no query');
    const checked = await checkedDocument(payload.query);
    if (checked.rootKey) seen.rootKey = checked.rootKey;
    if ('errors' in checked) {
      options.refused('document');
      return checked.errors;
    }
    const { document } = checked;
    (payload as { query: string }).query = '';
    const operation = getOperationAST(document, payload.operationName);
    // Coerced before any further wait, so that what the client sent beyond them is let go of.
    const variables = operation ? declaredVariables(schema(), operation, sent) : undefined;
    let tenantId: string;
    try {
      tenantId = await identityOf(services, connection);
    } catch (error) {
      const { code, message } = errorOf(error);
      return refuse('subscribe_identity', message, code);
    }
    const withinRate = await companyRate.consume(tenantId).then(() => true, () => false);
    if (!withinRate) return refuseAlike('company_rate', companyRateExceeded);
    if (!operation || !variables) return refuseAlike('operation', 'the document has no operation of that name (name one with operationName)');
    if (operation.operation !== 'subscription') {
      return refuse('operation', `only subscriptions are served over WebSocket; send ${operation.operation === 'query' ? 'queries' : 'mutations'} over HTTP POST to this path`);
    }
    if ('errors' in variables) {
      options.refused('variables');
      return variables.errors;
    }
    const { coerced, bytes } = variables;
    const overBudget = costRefusal(operation, estimates.of(schema(), document, operation, coerced), options.queryLimits.maxCost);
    if (overBudget) {
      options.refused('cost');
      return [overBudget];
    }
    // Checked and taken with no wait in between, so that a burst of subscribes cannot all pass.
    if (connection.variableBytes + bytes > limits.variableBytesPerConnection) return refuseAlike('connection_bytes', connectionBytes);
    if ((byCompany.get(tenantId) ?? 0) + bytes > limits.variableBytesPerCompany) return refuseAlike('company_bytes', companyBytes);
    if (replicaVariableBytes + bytes > limits.variableBytesPerReplica) return refuseAlike('replica_bytes', replicaBytes);
    const context = new SubscriptionContext(services, connection.headers, tenantId, options.budgetMs, {
      hub: options.hub,
    });
    if (connection.contexts.has(id)) {
      // Not expected (a reused id waits for the end of the one it replaces), but its slot and bytes are given back.
      release(connection, id);
    }
    connection.contexts.set(id, { context, tenantId, variableBytes: bytes });
    connection.variableBytes += bytes;
    byCompany.set(tenantId, (byCompany.get(tenantId) ?? 0) + bytes);
    replicaVariableBytes += bytes;
    return { schema: schema(), document, operationName: payload.operationName ?? null, variableValues: coerced, contextValue: context };
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
function recheckIdentities(connections: ReadonlyMap<unknown, Connection>, everyMs: number, services: ContextServices, refused: (reason: RefusalReason) => void): NodeJS.Timeout {
  const timer = setInterval(() => {
    for (const connection of connections.values()) {
      if (connection.contexts.size === 0) continue;
      connection.identity = undefined;
      identityOf(services, connection).catch((error: unknown) => {
        const { code, message } = errorOf(error);
        refused('identity_lapsed');
        const lapsed = new GraphQLError(message, { extensions: { code } });
        for (const { context } of connection.contexts.values()) context.end(lapsed);
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
 * What graphql-ws is given of a `connection_init` payload as `connectionParams`, in
 * its place: the headers of `names` (those identity reads) in the nested shape, each
 * at most MAX_INIT_HEADER_CHARS long; nothing else the client sent, which graphql-ws
 * would keep for the connection's life. The payload's headers are read in either shape
 * clients use: `{ headers: { 'x-tenant-id': … } }` (this subgraph's, graphql-ws links)
 * or flat, `{ 'x-tenant-id': … }` (Hive Gateway's); the nested one wins a name both
 * carry. Names are matched without regard to case; only string values are read.
 */
export function initParams(payload: unknown, names: readonly string[]): { headers: Record<string, string> } | undefined {
  if (!isRecord(payload)) return undefined;
  const headers: Record<string, string> = {};
  const nested = isRecord(payload.headers) ? payload.headers : undefined;
  // Each source is walked by its own keys, not looked up by name, so that `X-Tenant-Id` is read too.
  for (const source of nested ? [nested, payload] : [payload]) {
    for (const key of Object.keys(source)) {
      const name = key.length <= 64 ? key.toLowerCase() : '';
      if (!names.includes(name) || headers[name] !== undefined) continue;
      const value = source[key];
      if (typeof value === 'string' && value.length <= MAX_INIT_HEADER_CHARS) headers[name] = value;
    }
  }
  return { headers };
}

/**
 * The headers identity is read from (`names`, and only those): the upgrade request's,
 * completed by the `connection_init` payload's (`initParams`) for the names the upgrade
 * did not carry (a browser's WebSocket cannot set headers; a gateway forwards them there).
 */
export function identityHeaders(upgrade: IncomingHttpHeaders, params: Readonly<Record<string, unknown>> | undefined, names: readonly string[]): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  const sent = initParams(params, names)?.headers ?? {};
  for (const name of names) {
    const value = upgrade[name] ?? sent[name];
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/**
 * The coerced values of the variables `operation` declares (graphql-js's coercion, as
 * execution does it), and the bytes they keep (their JSON text's length); or why
 * they do not coerce (BAD_USER_INPUT). What the client sent beyond them is not kept.
 * graphql-js's `subscribe` coerces them again, a no-op for this schema's input types
 * (ID, DateTime, input objects of those).
 */
function declaredVariables(schema: GraphQLSchema, operation: OperationDefinitionNode, sent: unknown): { coerced: Record<string, unknown>; bytes: number } | { errors: readonly GraphQLError[] } {
  if (sent !== undefined && sent !== null && !isRecord(sent)) return { errors: [new GraphQLError('the subscribe payload\'s variables must be an object', { extensions: { code: 'BAD_USER_INPUT' } })] };
  const definitions = operation.variableDefinitions ?? [];
  if (definitions.length === 0) return { coerced: {}, bytes: 0 };
  const result = getVariableValues(schema, definitions, sent ?? {}, { maxErrors: 10 });
  if (result.errors) return { errors: result.errors.map((error) => new GraphQLError(error.message, { nodes: error.nodes ?? null, extensions: { code: 'BAD_USER_INPUT' } })) };
  return { coerced: result.coerced, bytes: JSON.stringify(result.coerced).length };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kib(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${Math.round(bytes / 1024)} KiB`;
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
