import { performance } from 'node:perf_hooks';
import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { GraphQLError, getNamedType, isLeafType, type FieldNode, type GraphQLObjectType, type GraphQLOutputType, type GraphQLResolveInfo } from 'graphql';
import type { Path } from 'graphql/jsutils/Path';
import { encodeTrace, FieldShape, TraceTree } from './inlineTraceEncoder';
import { instrumentResolvers, TRACER, type FieldTracer } from './inlineTraceResolvers';

/** The header a router (Apollo Router, Hive Gateway, @apollo/gateway) sends to ask for a federated trace. */
export const TRACE_HEADER = 'apollo-federation-include-trace';

/** Apollo's own plugin names itself in masked errors; the same name, so a router shows the same trace. */
const MASKED_BY = 'ApolloServerPluginInlineTrace';

/**
 * Federated tracing (`ftv1`), our own build of Apollo's `ApolloServerPluginInlineTrace`:
 * the same `Trace` (every resolved field with its response name, alias, return and
 * parent type and start/end offsets, list-item nodes, errors masked as Apollo masks
 * them by default), at a fraction of the cost per field.
 *
 * Apollo's trace builder keys its tree by a path string built per field (and again
 * for each field's parent), rebuilds type names per field, reads `process.hrtime()`
 * arrays, gets each field through its `willResolveField` dispatch and encodes through
 * protobufjs message objects. Here the parent of a field is found by graphql-js's path
 * objects (siblings share their parent's, so the last parent is remembered), each
 * field's names and types are protobuf bytes made once per field of the document, the
 * tree is a few columns (`TraceTree`), times come from `performance.now()`, the
 * resolvers report to the request's tracer directly (`inlineTraceResolvers.ts`), and
 * the protobuf is written by hand into one Buffer (`inlineTraceEncoder.ts`). A request
 * without the header costs nothing. `bench/README.md` has what each step bought.
 *
 * Installed beside `ApolloServerPluginInlineTraceDisabled()` (see `plugins.ts`), which
 * keeps Apollo from adding its own for a subgraph schema.
 */
export function inlineTrace(): ApolloServerPlugin<BaseContext> {
  return {
    async requestDidStart({ request, metrics, schema, contextValue }) {
      if (request.http?.headers.get(TRACE_HEADER) !== 'ftv1') return;
      // Another plugin may have decided this request is not traced (Apollo's plugin honours it too).
      if (metrics.captureTraces === false) return;
      metrics.captureTraces = true;
      const trace = new TraceBuilder();
      instrumentResolvers(schema);
      Object.defineProperty(contextValue, TRACER, { value: trace });
      return {
        async didEncounterErrors({ errors }) {
          trace.didEncounterErrors(errors);
        },
        async willSendResponse({ response, logger }) {
          trace.stop();
          // Apollo sends no trace with an incremental (@defer/@stream) answer.
          if (response.body.kind === 'incremental') return;
          const result = response.body.singleResult;
          const extensions = result.extensions ?? (result.extensions = Object.create(null) as Record<string, unknown>);
          if (extensions['ftv1'] !== undefined) throw new Error('The `ftv1` extension was already present.');
          let encoded: string;
          try {
            const queryPlan = metrics.queryPlanTrace ? encodeQueryPlan(metrics.queryPlanTrace) : undefined;
            encoded = encodeTrace(trace.tree, trace.times(), queryPlan).toString('base64');
          } catch (error) {
            // A trace is for the router's statistics: the answer goes out without it rather than not at all.
            logger.error(`ftv1: the federated trace could not be encoded, answered without it: ${error instanceof Error ? error.message : String(error)}`);
            return;
          }
          extensions['ftv1'] = encoded;
        },
      };
    },
  };
}

/**
 * A field's node bytes (response name, type, parent type, alias) and whether fields can
 * follow below it, once per field of a (cached) document. Keyed by the field's AST node;
 * the same node can resolve under several parent types (a fragment on an interface), so
 * the entry is remade when the parent or return type differs from the last one.
 */
interface FieldEntry {
  readonly parentType: GraphQLObjectType;
  readonly returnType: GraphQLOutputType;
  readonly shape: FieldShape;
  readonly leaf: boolean;
}
const fieldEntries = new WeakMap<FieldNode, FieldEntry>();

function fieldEntry(info: GraphQLResolveInfo, responseName: string): FieldEntry {
  const fieldNode = info.fieldNodes[0]!;
  let entry = fieldEntries.get(fieldNode);
  if (entry === undefined || entry.parentType !== info.parentType || entry.returnType !== info.returnType) {
    const originalFieldName = responseName !== info.fieldName ? info.fieldName : undefined;
    entry = {
      parentType: info.parentType,
      returnType: info.returnType,
      shape: new FieldShape(responseName, info.returnType.toString(), info.parentType.name, originalFieldName),
      leaf: isLeafType(getNamedType(info.returnType)),
    };
    fieldEntries.set(fieldNode, entry);
  }
  return entry;
}

/** The trace of one request, built as its fields resolve (nodes are TraceTree rows). */
class TraceBuilder implements FieldTracer {
  readonly tree = new TraceTree();
  private readonly startMs = Date.now();
  private readonly startedAt = performance.now();
  private endMs = 0;
  private durationNs = 0;
  private stopped = false;
  /** The node of each path below which fields may follow: fields of object and list type, list items. */
  private readonly nodes = new Map<Path, number>();
  // Sibling fields share their parent's path object, so most parents are the last one.
  private lastPrev: Path | undefined = undefined;
  private lastParent = 0;

  fieldStarted(info: GraphQLResolveInfo): number {
    if (this.stopped) return -1;
    const path = info.path;
    const entry = fieldEntry(info, path.key as string);
    const node = this.tree.add(this.parentOf(path), path.key, entry.shape);
    if (!entry.leaf) this.nodes.set(path, node);
    this.tree.starts[node] = this.now();
    return node;
  }

  fieldEnded(node: number): void {
    if (node >= 0) this.tree.ends[node] = this.now();
  }

  didEncounterErrors(errors: ReadonlyArray<GraphQLError>): void {
    for (const error of errors) {
      // An error a subgraph of ours passed on (a gateway's) is traced there already.
      if (error.extensions?.['serviceName']) continue;
      const masked = maskError(error);
      this.tree.addError(this.nodeAt(masked.path), { message: masked.message, locations: masked.locations ?? [], json: JSON.stringify(masked) });
    }
  }

  stop(): void {
    if (this.stopped) return;
    this.durationNs = this.now();
    this.endMs = Date.now();
    this.stopped = true;
  }

  times(): { startMs: number; endMs: number; durationNs: number } {
    return { startMs: this.startMs, endMs: this.endMs, durationNs: this.durationNs };
  }

  /** Nanoseconds since the request started. */
  private now(): number {
    return Math.round((performance.now() - this.startedAt) * 1e6);
  }

  private parentOf(path: Path): number {
    const prev = path.prev;
    if (prev === this.lastPrev) return this.lastParent;
    const parent = this.nodeOf(prev);
    this.lastPrev = prev;
    this.lastParent = parent;
    return parent;
  }

  /** The node of `path`, made (with its missing ancestors) when absent: a list item's node appears with its first field. */
  private nodeOf(path: Path | undefined): number {
    if (path === undefined) return 0;
    let node = this.nodes.get(path);
    if (node === undefined) {
      node = this.tree.add(this.nodeOf(path.prev), path.key, undefined);
      this.nodes.set(path, node);
    }
    return node;
  }

  /** The node of an error's path (the root without one), made when no field got there. Errors are rare: a scan. */
  private nodeAt(path: ReadonlyArray<string | number> | undefined): number {
    let node = 0;
    if (path === undefined) return node;
    const { tree } = this;
    for (const key of path) {
      let child = -1;
      for (let i = node + 1; i < tree.length && child < 0; i++) {
        if (tree.parents[i] === node && (typeof key === 'number' ? tree.indexes[i] === key : tree.responseName(i) === key)) child = i;
      }
      node = child >= 0 ? child : tree.add(node, key, undefined);
    }
    return node;
  }
}

/** What Apollo's plugin reports of an error by default: `<masked>`, with the error's locations and path. */
function maskError(error: GraphQLError): GraphQLError {
  return new GraphQLError('<masked>', {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { maskedBy: MASKED_BY },
  });
}

/** A gateway's query plan trace (never set in a subgraph), encoded by protobufjs: loaded only then. */
function encodeQueryPlan(plan: object): Uint8Array {
  const { Trace } = require('@apollo/usage-reporting-protobuf') as typeof import('@apollo/usage-reporting-protobuf');
  return Trace.QueryPlanNode.encode(plan).finish();
}
