/**
 * The federated trace (`ftv1`) as protobuf bytes, written by hand.
 *
 * The message is Apollo's `Trace` (`@apollo/usage-reporting-protobuf`, `reports.proto`):
 * only the fields Apollo's inline-trace plugin sets, in field-number order as protobufjs
 * writes them, so the bytes match what `Trace.encode` makes of Apollo's own trace tree.
 * protobufjs builds the message with a chain of forked writers, one per node; here the
 * whole trace is written back to front into one Buffer in one walk of the tree (see
 * encodeTrace), which costs a fraction for the ~300 nodes of a page.
 *
 * Field numbers and wire types (reports.proto):
 *   Trace:     end_time 3 (Timestamp), start_time 4 (Timestamp), duration_ns 11 (uint64),
 *              root 14 (Node), query_plan 26 (QueryPlanNode), field_execution_weight 31 (double)
 *   Node:      response_name 1 (string), index 2 (uint32), type 3 (string), start_time 8
 *              (uint64), end_time 9 (uint64), error 11 (Error), child 12 (Node), parent_type 13
 *              (string), original_field_name 14 (string)
 *   Error:     message 1 (string), location 2 (Location), json 4 (string)
 *   Location:  line 1 (uint32), column 2 (uint32)
 *   Timestamp: seconds 1 (int64), nanos 2 (int32)
 */

/** One error of a node, as Apollo reports it (message, locations, the error's JSON). */
export interface TraceError {
  readonly message: string;
  readonly locations: ReadonlyArray<{ readonly line: number; readonly column: number }>;
  readonly json: string;
}

/**
 * What a field node has in common with every other node of the same field of the same
 * document: its response name and type (fields 1 and 3, written before the times) and
 * its parent type and original field name (fields 13 and 14, written after the
 * children), each as ready protobuf bytes. Built once per field of a cached document,
 * so a trace copies bytes instead of measuring and encoding strings per node.
 */
export class FieldShape {
  readonly head: Uint8Array;
  readonly tail: Uint8Array;

  constructor(
    readonly responseName: string,
    type: string,
    parentType: string,
    originalFieldName: string | undefined,
  ) {
    this.head = Buffer.concat([stringField(10, responseName), stringField(26, type)]);
    this.tail = Buffer.concat([stringField(106, parentType), ...(originalFieldName === undefined ? [] : [stringField(114, originalFieldName)])]);
  }
}

/**
 * The trace tree as columns: node i's parent, list index, start and end (ns since the
 * trace started, -1 when unset) and field shape. Node 0 is the root; a node is always
 * added after its parent, so a child is found by scanning forward from its parent
 * (`nodeAt` in inlineTrace.ts). Columns instead of an object
 * per node: by the time the answer is encoded the ~300 nodes of a page are no longer
 * in the CPU cache, and reading a few dense arrays costs a fraction of chasing objects.
 */
export class TraceTree {
  readonly parents: number[] = [-1];
  readonly indexes: number[] = [-1];
  readonly starts: number[] = [-1];
  readonly ends: number[] = [-1];
  readonly shapes: Array<FieldShape | undefined> = [undefined];
  /** Each node's last child and previous sibling (-1: none): the children, last to first, for the writer. */
  readonly lastChild: number[] = [-1];
  readonly previousSibling: number[] = [-1];
  /** The response names of nodes without a shape (only those an error's path made). */
  readonly names = new Map<number, string>();
  readonly errors = new Map<number, TraceError[]>();
  /** At least the encoded size of the tree, so the writer can allocate once without a size pass. */
  maxBytes = NODE_MAX_BYTES;

  get length(): number {
    return this.parents.length;
  }

  /** Adds a node under `parent`: a field (`shape`), a list item (numeric `key`) or a named node (string `key`). */
  add(parent: number, key: string | number, shape: FieldShape | undefined): number {
    const node = this.parents.length;
    this.parents.push(parent);
    this.indexes.push(typeof key === 'number' ? key : -1);
    this.starts.push(-1);
    this.ends.push(-1);
    this.shapes.push(shape);
    this.lastChild.push(-1);
    this.previousSibling.push(this.lastChild[parent]!);
    this.lastChild[parent] = node;
    if (shape !== undefined) this.maxBytes += NODE_MAX_BYTES + shape.head.length + shape.tail.length;
    else if (typeof key === 'string') {
      this.names.set(node, key);
      this.maxBytes += NODE_MAX_BYTES + stringFieldSize(key);
    } else this.maxBytes += NODE_MAX_BYTES;
    return node;
  }

  /** The response name (or undefined: a list item, the root) of `node`. */
  responseName(node: number): string | undefined {
    return this.shapes[node]?.responseName ?? this.names.get(node);
  }

  addError(node: number, error: TraceError): void {
    this.maxBytes += 6 + traceErrorSize(error);
    const errors = this.errors.get(node);
    if (errors === undefined) this.errors.set(node, [error]);
    else errors.push(error);
  }
}

/** What the trace message holds besides the tree. */
export interface TraceTimes {
  /** Wall-clock start and end, in milliseconds since the epoch. */
  readonly startMs: number;
  readonly endMs: number;
  readonly durationNs: number;
}

// A node's bytes besides its field bytes and name: index (1 + 5), start and end (1 + 10
// each), and its tag and length in its parent (1 + 5).
const NODE_MAX_BYTES = 6 + 11 + 11 + 6;
// The trace's own fields: two timestamps (1 + 1 + 11 + 1 + 6 each), duration (1 + 10),
// the root's tag and length (1 + 5), field_execution_weight (2 + 8).
const TRACE_MAX_BYTES = 2 * 20 + 11 + 6 + 10;

/**
 * The `Trace` message of `tree`, as one Buffer; `queryPlan`: an already encoded
 * QueryPlanNode, if any. Written back to front into a buffer of the tree's size bound:
 * a message's length is known once its content is written, so one walk of the tree
 * writes everything (children last to first), with no pass to measure sizes first.
 */
export function encodeTrace(tree: TraceTree, times: TraceTimes, queryPlan?: Uint8Array): Buffer {
  const bound = tree.maxBytes + TRACE_MAX_BYTES + (queryPlan ? 7 + queryPlan.length : 0);
  const buf = Buffer.allocUnsafe(bound);
  let pos = bound;
  pos -= 8;
  buf.writeDoubleLE(1, pos);
  buf[--pos] = 1; // field_execution_weight: 31 << 3 | 1 = 249, a two-byte tag
  buf[--pos] = 249;
  if (queryPlan) {
    pos -= queryPlan.length;
    buf.set(queryPlan, pos);
    pos = varintBefore(buf, pos, queryPlan.length);
    buf[--pos] = 1; // query_plan: 26 << 3 | 2 = 210, a two-byte tag
    buf[--pos] = 210;
  }
  const rootEnd = pos;
  pos = nodeBefore(buf, pos, tree, 0);
  pos = varintBefore(buf, pos, rootEnd - pos);
  buf[--pos] = 114; // root
  pos = varintBefore(buf, pos, times.durationNs);
  buf[--pos] = 88; // duration_ns
  pos = timestampBefore(buf, pos, times.startMs);
  buf[--pos] = 34; // start_time
  pos = timestampBefore(buf, pos, times.endMs);
  buf[--pos] = 26; // end_time
  if (pos < 0) throw new Error(`ftv1 encoder: the size bound ${bound} was too small`);
  return buf.subarray(pos);
}

/** Writes `node` (its content, not its own tag and length) to end at `end`; returns where it starts. */
function nodeBefore(buf: Buffer, end: number, tree: TraceTree, node: number): number {
  let pos = end;
  const shape = tree.shapes[node];
  if (shape !== undefined) pos = bytesBefore(buf, pos, shape.tail);
  for (let child = tree.lastChild[node]!; child >= 0; child = tree.previousSibling[child]!) {
    const childEnd = pos;
    pos = nodeBefore(buf, pos, tree, child);
    pos = varintBefore(buf, pos, childEnd - pos);
    buf[--pos] = 98; // child
  }
  const errors = tree.errors.size === 0 ? undefined : tree.errors.get(node);
  if (errors !== undefined) {
    for (let i = errors.length - 1; i >= 0; i--) {
      const error = errors[i]!;
      const size = traceErrorSize(error);
      pos -= size;
      writeTraceError(buf, pos, error);
      pos = varintBefore(buf, pos, size);
      buf[--pos] = 90; // error
    }
  }
  const nodeEnd = tree.ends[node]!;
  if (nodeEnd >= 0) {
    pos = varintBefore(buf, pos, nodeEnd);
    buf[--pos] = 72; // end_time
  }
  const start = tree.starts[node]!;
  if (start >= 0) {
    pos = varintBefore(buf, pos, start);
    buf[--pos] = 64; // start_time
  }
  const index = tree.indexes[node]!;
  if (index >= 0) {
    pos = varintBefore(buf, pos, index);
    buf[--pos] = 16; // index
  }
  if (shape !== undefined) return bytesBefore(buf, pos, shape.head);
  const name = tree.names.size === 0 ? undefined : tree.names.get(node);
  if (name !== undefined) {
    pos -= stringFieldSize(name);
    writeStringField(buf, pos, 10, name); // response_name
  }
  return pos;
}

function varintBefore(buf: Buffer, end: number, value: number): number {
  const start = end - varintSize(value);
  writeVarint(buf, start, value);
  return start;
}

function timestampBefore(buf: Buffer, end: number, ms: number): number {
  const size = timestampSize(ms);
  writeTimestamp(buf, end - size, ms);
  return varintBefore(buf, end - size, size);
}

// A few bytes each: a loop beats a call into TypedArray.prototype.set.
function bytesBefore(buf: Buffer, end: number, bytes: Uint8Array): number {
  const start = end - bytes.length;
  for (let i = 0; i < bytes.length; i++) buf[start + i] = bytes[i]!;
  return start;
}

// Errors are rare (one per failed field at most), so their sizes are simply recomputed when written.
function traceErrorSize(error: TraceError): number {
  let size = stringFieldSize(error.message);
  for (const location of error.locations) {
    const locationSize = locationContentSize(location);
    size += 1 + varintSize(locationSize) + locationSize;
  }
  return size + stringFieldSize(error.json);
}

function writeTraceError(buf: Buffer, pos: number, error: TraceError): number {
  pos = writeStringField(buf, pos, 10, error.message);
  for (const location of error.locations) {
    buf[pos++] = 18;
    pos = writeVarint(buf, pos, locationContentSize(location));
    buf[pos++] = 8;
    pos = writeVarint(buf, pos, location.line);
    buf[pos++] = 16;
    pos = writeVarint(buf, pos, location.column);
  }
  return writeStringField(buf, pos, 34, error.json);
}

function locationContentSize(location: { readonly line: number; readonly column: number }): number {
  return 1 + varintSize(location.line) + 1 + varintSize(location.column);
}

// A Timestamp: seconds and nanos, both written even when 0 (Apollo sets both).
function timestampSize(ms: number): number {
  const millis = ms % 1000;
  return 1 + varintSize((ms - millis) / 1000) + 1 + varintSize(millis * 1e6);
}

function writeTimestamp(buf: Buffer, pos: number, ms: number): number {
  const millis = ms % 1000;
  buf[pos++] = 8;
  pos = writeVarint(buf, pos, (ms - millis) / 1000);
  buf[pos++] = 16;
  return writeVarint(buf, pos, millis * 1e6);
}

/** A string field, tag included, as bytes. */
function stringField(tag: number, value: string): Buffer {
  const buf = Buffer.allocUnsafe(stringFieldSize(value));
  writeStringField(buf, 0, tag, value);
  return buf;
}

// Strings (error texts, the rare node an error's path names): a one-byte tag, the UTF-8
// length, the UTF-8 bytes. Field names and types are bytes already (FieldShape).
function stringFieldSize(value: string): number {
  const length = Buffer.byteLength(value, 'utf8');
  return 1 + varintSize(length) + length;
}

function writeStringField(buf: Buffer, pos: number, tag: number, value: string): number {
  buf[pos++] = tag;
  const length = Buffer.byteLength(value, 'utf8');
  pos = writeVarint(buf, pos, length);
  return pos + buf.write(value, pos, length, 'utf8');
}

// Varints of non-negative integers up to 2^53 (nanosecond offsets, lengths, seconds).
function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  let size = 4;
  value = Math.floor(value / 0x10000000);
  while (value >= 1) {
    size++;
    value = Math.floor(value / 0x80);
  }
  return size;
}

function writeVarint(buf: Buffer, pos: number, value: number): number {
  while (value >= 0x80000000) {
    buf[pos++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  while (value >= 0x80) {
    buf[pos++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  buf[pos++] = value;
  return pos;
}
