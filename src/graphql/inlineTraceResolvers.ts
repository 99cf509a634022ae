import { defaultFieldResolver, GraphQLObjectType, type GraphQLFieldResolver, type GraphQLResolveInfo, type GraphQLSchema } from 'graphql';

/**
 * Per-field start and end times for the inline trace, straight from the resolvers.
 *
 * Apollo's `willResolveField` hook gets there through a wrapper around every resolver
 * (`schemaInstrumentation` in @apollo/server) that, per field, allocates the hook's
 * argument object, maps and filters the listeners into fresh arrays and returns a
 * rest-argument closure, before our own hook runs (what skipping it saved is in
 * bench/README.md, "What each step bought"). This does what that wrapper does, with
 * the same timing rule (a field ends when its value, a promise of it, or every
 * promise of a list of them settles), and calls the request's tracer directly.
 *
 * The schema is wrapped once, at the first traced request (a request without the
 * header never wraps it). After that every field of every request passes through
 * one check of its context for a tracer, as Apollo's own wrapper does.
 */

/** What a traced request's context carries under TRACER: the tracer of that request. */
export interface FieldTracer {
  /** A field starts resolving; the returned token is handed to fieldEnded. */
  fieldStarted(info: GraphQLResolveInfo): number;
  fieldEnded(token: number): void;
}

/** The context key of the request's tracer (a symbol: invisible to resolvers and to JSON). */
export const TRACER: unique symbol = Symbol('wfs.inlineTrace.tracer');

const instrumented = new WeakSet<GraphQLSchema>();

/** Wraps the resolvers of `schema` (once) so fields of requests whose context has a TRACER are timed. */
export function instrumentResolvers(schema: GraphQLSchema): void {
  if (instrumented.has(schema)) return;
  instrumented.add(schema);
  for (const type of Object.values(schema.getTypeMap())) {
    // Introspection types are not traced (Apollo's wrapper skips them too).
    if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) field.resolve = traced(field.resolve ?? defaultFieldResolver);
  }
}

function traced(resolve: GraphQLFieldResolver<unknown, unknown>): GraphQLFieldResolver<unknown, unknown> {
  return (source, args, context, info) => {
    const tracer = (context as { [TRACER]?: FieldTracer } | null | undefined)?.[TRACER];
    if (tracer === undefined) return resolve(source, args, context, info);
    const token = tracer.fieldStarted(info);
    let result: unknown;
    try {
      result = resolve(source, args, context, info);
    } catch (error) {
      tracer.fieldEnded(token);
      throw error;
    }
    whenFinished(result, tracer, token);
    return result;
  };
}

/** Apollo's `whenResultIsFinished`: a value ends now, a promise when it settles, a list when its promises all have. */
function whenFinished(result: unknown, tracer: FieldTracer, token: number): void {
  // Most fields are scalars: done now, without looking for a `then` on a string's prototype.
  if ((typeof result !== 'object' && typeof result !== 'function') || result === null) {
    tracer.fieldEnded(token);
  } else if (isPromise(result)) {
    result.then(
      (value) => whenFinished(value, tracer, token),
      () => tracer.fieldEnded(token),
    );
  } else if (Array.isArray(result) && result.some(isPromise)) {
    Promise.all(result).then(
      () => tracer.fieldEnded(token),
      () => tracer.fieldEnded(token),
    );
  } else {
    tracer.fieldEnded(token);
  }
}

function isPromise(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}
