/**
 * Subscribe admission: the graphql-ws hooks the WebSocket transport (http/liveSocket.ts)
 * is given at wiring. Identity as for queries (identity.ts: the upgrade's headers
 * completed by `connection_init`'s, checked at connect, at each subscribe at most once a
 * second, and again every `identityRecheckMs` while subscriptions are open). A subscribe
 * meets the query path's document check (document.ts) and cost bound (cost.ts), and the
 * gate's bounds (`limits.gate`, config/limits.ts): subscriptions per connection, new subscriptions per
 * company and second, refused subscribes per connection, bytes of variables kept
 * (variableBytes.ts). Every refusal is one reason of refusals.ts, counted through
 * `refused`.
 *
 * Nothing a client sent is kept beyond need: of `connection_init`, the headers identity
 * reads; of a subscribe, the document (once per text) and the coerced values of its
 * declared variables. The transport holds a subscribe's text beside what graphql-ws is
 * handed, and the gate takes it (`GateExtra.takeSubscribe`). A refusal is the
 * operation's one result (a `next` with the errors, then `complete`), as a resolver's
 * error is, the shape gateways pass on: its execution arguments are registered as
 * refused, and the gate's `subscribe` answers them with their errors.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GraphQLError, getOperationAST, parse, subscribe, type ExecutionArgs } from 'graphql';
import type { Context } from 'graphql-ws';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { SubscriptionContext } from '../data/subscriptionContext';
import { CostEstimates, costRefusal } from './cost';
import { createDocumentCheck, declaredVariables } from './document';
import { type GateExtra, type LiveTransport, type SubscribeGate, type SubscribeGateOptions } from './gateOptions';
import { answeredByDefault, ConnectionIdentity, closeReason, identityError, identityHeaders, initParams, recheckIdentities, type VerifiedIdentity } from './identity';
import { closeCodeOf, messageOf, refusal, type RefusalReason } from './refusals';
import { VariableBytes } from './variableBytes';

export { type GateExtra, type LiveTransport, type SubscribeGate, type SubscribeGateLimits, type SubscribeGateOptions } from './gateOptions';

const REFUSED_DOCUMENT = parse('subscription Refused { __typename }');

/** What the gate keeps of one connection: its identity, its open subscriptions' contexts (the context registry), its slots, refusals and bytes. */
interface Connection {
  readonly identity: ConnectionIdentity;
  readonly close: GateExtra['close'];
  readonly contexts: Map<string, { readonly context: SubscriptionContext; readonly tenantId: string; readonly variableBytes: number }>;
  variableBytes: number;
  /** Subscriptions accepted or being checked: taken before the first await, so a burst of subscribes cannot all pass the bound. */
  slots: number;
  refusals: number;
  /** Demo mode: the tenant the connection was given because it named none. */
  readonly demoTenant: string | undefined;
  readonly transport: LiveTransport;
}

type Refusal = { readonly reason: RefusalReason; readonly errors: readonly GraphQLError[] };

export function createSubscribeGate(options: SubscribeGateOptions): SubscribeGate {
  const { limits } = options;
  const { schema, services, refused } = options;
  const connections = new Map<Context<Record<string, unknown> | undefined, GateExtra>, Connection>();
  const bytes = new VariableBytes(limits);
  // Only the headers identity reads in this mode: the router secret is checked at the
  // upgrade (upgradeGate.ts) and not kept; `authorization` is not read in trusted-header mode.
  const identityNames = services.identify.reads ?? [options.tenantHeader.toLowerCase(), 'authorization'];
  const verify = services.identify.verify ?? (async (headers: IncomingHttpHeaders) => {
    const tenantId = await services.identify(headers);
    return { tenantId, recheck: () => services.identify(headers) };
  });
  const { refuse, answer, errorsOf } = createRefusalAnswers(schema, refused);
  const perConnection = `at most ${limits.subscriptionsPerConnection} subscriptions may be open on one connection; complete some, or open another connection`;
  const release = (connection: Connection, id: string) => {
    const held = connection.contexts.get(id);
    if (!held) return;
    held.context.close();
    connection.contexts.delete(id);
    connection.slots -= 1;
    connection.variableBytes -= held.variableBytes;
    bytes.give(held.tenantId, held.variableBytes);
    options.opened?.(connection.transport, -1);
  };
  const recheck = recheckIdentities(function* () {
    for (const connection of connections.values()) {
      yield { identity: connection.identity, open: connection.contexts.size, lapsed: (error: GraphQLError) => {
        refused('identity_lapsed', connection.transport);
        for (const { context } of connection.contexts.values()) context.end(error);
      } };
    }
  }, limits.identityRecheckMs);
  const admit = createAdmission(options, bytes, refuse, release);

  return {
    connectionParams: (payload) => initParams(payload, identityNames, limits.initHeaderChars),
    onConnect: async (ctx) => {
      const connection = await connect(ctx, options, identityNames, verify);
      if (!connection) return false;
      connections.set(ctx, connection);
      return connection.demoTenant ? { demoTenant: connection.demoTenant } : true;
    },
    onSubscribe: async (ctx, id, payload) => {
      const body = ctx.extra.takeSubscribe(id);
      const connection = connections.get(ctx);
      if (!connection) return answer(refuse('not_initialised', messageOf('not_initialised')), ctx.extra.transport ?? 'ws');
      if (connection.slots >= limits.subscriptionsPerConnection) return answer(refuse('connection', perConnection), connection.transport);
      connection.slots += 1;
      const seen: { rootKey?: string } = {};
      const accepted = await admit(connection, id, body, payload.operationName, seen);
      if (!('reason' in accepted)) return accepted;
      // A refusal gives its slot back at once; an accepted one when it completes (onComplete).
      connection.slots -= 1;
      const args = answer(accepted, connection.transport, seen.rootKey);
      if (++connection.refusals > limits.refusalsPerConnection) {
        refused('refusals', connection.transport);
        connection.close(closeCodeOf('refusals') ?? 1008, messageOf('refusals'));
      }
      return args;
    },
    subscribe: (args) => {
      const errors = errorsOf(args);
      return errors ? { errors } : subscribe(args);
    },
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
}

/**
 * A connection's `connection_init`: the headers identity reads, taken once, and the
 * identity verified. A refused identity closes the connection (undefined), but for a
 * gateway's; otherwise the connection as the gate keeps it.
 */
async function connect(
  ctx: Context<Record<string, unknown> | undefined, GateExtra>,
  options: SubscribeGateOptions,
  identityNames: readonly string[],
  verify: (headers: IncomingHttpHeaders) => Promise<VerifiedIdentity>,
): Promise<Connection | undefined> {
  const { services, refused } = options;
  const headers = identityHeaders(ctx.extra.takeHeaders(), ctx.connectionParams, identityNames, options.limits.initHeaderChars);
  // Read once: what graphql-ws keeps for the connection's life (its `extra`, the
  // payload) is not needed again; the identity keeps only the headers it reads.
  delete (ctx as { connectionParams?: unknown }).connectionParams;
  const verified = await verify(headers).catch((error: unknown) => ({ problem: identityError(error) }));
  const problem = 'problem' in verified ? verified.problem : undefined;
  // A gateway's connection (the transport's router verdict) is kept when its caller's
  // identity is refused: each subscribe is answered with the refusal, which gateways
  // pass on, where a close at `connection_init` reaches their client as silence.
  if (problem && !ctx.extra.gateway) {
    refused('identity', ctx.extra.transport ?? 'ws');
    ctx.extra.close(closeCodeOf('identity') ?? 4403, closeReason(`${problem.code}: ${problem.message}`));
    return undefined;
  }
  const demoTenant = !problem && answeredByDefault(options.demo, (name) => headers[name]) ? options.demo.defaultTenant : undefined;
  // A gateway's connection whose caller was refused keeps the headers identity reads
  // (a few, each bounded), to check them again at each subscribe; every other
  // connection keeps only what its verification kept.
  const identity = 'problem' in verified ? new ConnectionIdentity(() => services.identify(headers)) : ConnectionIdentity.of(verified);
  return { identity, close: ctx.extra.close, contexts: new Map(), variableBytes: 0, slots: 0, refusals: 0, demoTenant, transport: ctx.extra.transport ?? 'ws' };
}

/** Makes the refusal of `reason` with `message` (its code refusals.ts's unless given). */
type Refuse = (reason: RefusalReason, message: string, code?: string | null) => Refusal;

/** How refusals are answered: their errors (made once per message), and the execution arguments that stand for a refused subscribe until the gate's `subscribe` answers them. */
function createRefusalAnswers(schema: SubscribeGateOptions['schema'], refused: SubscribeGateOptions['refused']) {
  // Refusals that say the same every time are made once: a GraphQLError records a stack trace when made.
  const alike = new Map<string, readonly GraphQLError[]>();
  const refuse: Refuse = (reason, message, code = refusal(reason).code) => {
    let errors = alike.get(message);
    if (!errors) alike.set(message, (errors = Object.freeze([new GraphQLError(message, { extensions: { code } })])));
    return { reason, errors };
  };
  // Execution arguments of refused subscribes and their errors, for the gate's `subscribe`.
  const refusedArgs = new WeakMap<ExecutionArgs, readonly GraphQLError[]>();
  const answer = ({ reason, errors }: Refusal, transport: LiveTransport, rootKey?: string): ExecutionArgs => {
    refused(reason, transport);
    // With the path of the subscription's field, as a resolver's error has: gateways map a subgraph's error onto their client's field by it.
    const located = rootKey ? errors.map((error) => new GraphQLError(error.message, { nodes: error.nodes ?? null, path: [rootKey], extensions: error.extensions })) : errors;
    const args: ExecutionArgs = { schema: schema(), document: REFUSED_DOCUMENT };
    refusedArgs.set(args, located);
    return args;
  };
  return { refuse, answer, errorsOf: (args: ExecutionArgs) => refusedArgs.get(args) };
}

/** The checks of a subscribe past the connection's bound: document, identity, rate, operation, variables, cost, bytes; its execution arguments, or its refusal. */
function createAdmission(options: SubscribeGateOptions, bytes: VariableBytes, refuse: Refuse, release: (connection: Connection, id: string) => void) {
  const { limits, schema, services } = options;
  const checkedDocument = createDocumentCheck(schema, options.queryLimits);
  const estimates = new CostEstimates();
  // The burst per the window the steady rate earns it in (1,000 per 10 s by default).
  const companyRate = new RateLimiterMemory({ points: limits.companySubscribeBurst, duration: Math.max(1, limits.companySubscribeBurst / limits.companySubscribesPerSecond) });
  const companyRateExceeded = `your company opened more than ${limits.companySubscribeBurst} subscriptions in a short time on this replica; retry in a moment`;
  return async function admit(connection: Connection, id: string, body: ReturnType<GateExtra['takeSubscribe']>, operationName: string | null | undefined, seen: { rootKey?: string }): Promise<ExecutionArgs | Refusal> {
    if (typeof body?.query !== 'string') return refuse('operation', 'the subscribe payload has no query');
    const checked = await checkedDocument(body.query);
    if (checked.rootKey) seen.rootKey = checked.rootKey;
    if ('errors' in checked) return { reason: 'document', errors: checked.errors };
    const { document } = checked;
    const operation = getOperationAST(document, operationName);
    // Coerced before any further wait, so that what the client sent beyond them is let go of.
    const variables = operation ? declaredVariables(schema(), operation, body.variables) : undefined;
    let tenantId: string;
    try {
      tenantId = await connection.identity.tenant();
    } catch (error) {
      const { code, message } = identityError(error);
      return { reason: 'subscribe_identity', errors: [new GraphQLError(message, { extensions: { code } })] };
    }
    if (!(await companyRate.consume(tenantId).then(() => true, () => false))) return refuse('company_rate', companyRateExceeded);
    if (!operation || !variables) return refuse('operation', 'the document has no operation of that name (name one with operationName)');
    if (operation.operation !== 'subscription') return refuse('operation', `only subscriptions are served over WebSocket; send ${operation.operation === 'query' ? 'queries' : 'mutations'} over HTTP POST to this path`);
    if ('errors' in variables) return { reason: 'variables', errors: variables.errors };
    const overBudget = costRefusal(operation, estimates.of(schema(), document, operation, variables.coerced), options.queryLimits.maxCost);
    if (overBudget) return { reason: 'cost', errors: [overBudget] };
    // Checked and taken with no wait in between, so that a burst of subscribes cannot all pass.
    const over = bytes.over(connection.variableBytes, tenantId, variables.bytes);
    if (over) return refuse(over, bytes.messages[over]);
    const context = new SubscriptionContext(services, tenantId, options.budgetMs, { hub: options.hub, transport: connection.transport });
    // Not expected (a reused id waits for the end of the one it replaces), but its slot and bytes are given back.
    if (connection.contexts.has(id)) release(connection, id);
    connection.contexts.set(id, { context, tenantId, variableBytes: variables.bytes });
    connection.variableBytes += variables.bytes;
    bytes.take(tenantId, variables.bytes);
    options.opened?.(connection.transport, 1);
    return { schema: schema(), document, operationName: operationName ?? null, variableValues: variables.coerced, contextValue: context };
  };
}
