/**
 * The federated trace (`ftv1`) as protobuf bytes, written by hand.
 *
 * The message is Apollo's `Trace` (`@apollo/usage-reporting-protobuf`, `reports.proto`):
 * only the fields Apollo's inline-trace plugin sets, in field-number order as protobufjs
 * writes them, so the bytes match what `Trace.encode` makes of Apollo's own trace tree.
 * protobufjs builds the message with a chain of forked writers, one per node; here
 * the sizes are computed first (scans of the tree's columns) and the whole trace is
 * written into one Buffer (one walk), which costs a fraction for the ~300 nodes of a page.
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
 * added after its parent, which the size pass relies on. Columns instead of an object
 * per node: by the time the answer is encoded the ~300 nodes of a page are no longer
 * in the CPU cache, and reading a few dense arrays costs a fraction of chasing objects.
 */
export class TraceTree {
  readonly parents: number[] = [-1];
  readonly indexes: number[] = [-1];
  readonly starts: number[] = [-1];
  readonly ends: number[] = [-1];
  readonly shapes: Array<FieldShape | undefined> = [undefined];
  /** The response names of nodes without a shape (only those an error's path made). */
  readonly names = new Map<number, string>();
  readonly errors = new Map<number, TraceError[]>();

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
    if (shape === undefined && typeof key === 'string') this.names.set(node, key);
    return node;
  }

  /** The response name (or undefined: a list item, the root) of `node`. */
  responseName(node: number): string | undefined {
    return this.shapes[node]?.responseName ?? this.names.get(node);
  }

  addError(node: number, error: TraceError): void {
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

/** The `Trace` message of `tree`, as one Buffer; `queryPlan`: an already encoded QueryPlanNode, if any. */
export function encodeTrace(tree: TraceTree, times: TraceTimes, queryPlan?: Uint8Array): Buffer {
  const layout = layOut(tree);
  const rootSize = layout.sizes[0]!;
  const startSize = timestampSize(times.startMs);
  const endSize = timestampSize(times.endMs);
  let total =
    1 + varintSize(endSize) + endSize +
    1 + varintSize(startSize) + startSize +
    1 + varintSize(times.durationNs) +
    1 + varintSize(rootSize) + rootSize +
    2 + 8;
  if (queryPlan) total += 2 + varintSize(queryPlan.length) + queryPlan.length;

  const buf = Buffer.allocUnsafe(total);
  let pos = 0;
  buf[pos++] = 26; // end_time
  pos = writeVarint(buf, pos, endSize);
  pos = writeTimestamp(buf, pos, times.endMs);
  buf[pos++] = 34; // start_time
  pos = writeVarint(buf, pos, startSize);
  pos = writeTimestamp(buf, pos, times.startMs);
  buf[pos++] = 88; // duration_ns
  pos = writeVarint(buf, pos, times.durationNs);
  buf[pos++] = 114; // root
  pos = writeVarint(buf, pos, rootSize);
  pos = writeNode(buf, pos, tree, layout, 0);
  if (queryPlan) {
    buf[pos++] = 210; // query_plan (26 << 3 | 2 = 210, a two-byte tag)
    buf[pos++] = 1;
    pos = writeVarint(buf, pos, queryPlan.length);
    buf.set(queryPlan, pos);
    pos += queryPlan.length;
  }
  buf[pos++] = 249; // field_execution_weight (31 << 3 | 1 = 249, a two-byte tag)
  buf[pos++] = 1;
  buf.writeDoubleLE(1, pos);
  pos += 8;
  if (pos !== total) throw new Error(`ftv1 encoder: wrote ${pos} bytes of ${total}`);
  return buf;
}

/** Each node's encoded content length, and its children in order (`children[first[i] .. first[i + 1]]`). */
interface Layout {
  readonly sizes: number[];
  readonly first: number[];
  readonly children: number[];
}

function layOut(tree: TraceTree): Layout {
  const { parents, indexes, starts, ends, shapes } = tree;
  const count = parents.length;
  const sizes = new Array<number>(count);
  // The node's own fields first (one scan in node order)...
  for (let i = 0; i < count; i++) {
    const shape = shapes[i];
    let size = shape === undefined ? 0 : shape.head.length + shape.tail.length;
    if (indexes[i]! >= 0) size += 1 + varintSize(indexes[i]!);
    if (starts[i]! >= 0) size += 1 + varintSize(starts[i]!);
    if (ends[i]! >= 0) size += 1 + varintSize(ends[i]!);
    sizes[i] = size;
  }
  for (const [node, name] of tree.names) sizes[node]! += stringFieldSize(name);
  for (const [node, errors] of tree.errors) {
    for (const error of errors) {
      const errorSize = traceErrorSize(error);
      sizes[node]! += 1 + varintSize(errorSize) + errorSize;
    }
  }
  // ...then each node into its parent, last to first: a node comes after its parent,
  // so its own size is complete when it is reached.
  for (let i = count - 1; i > 0; i--) {
    const size = sizes[i]!;
    sizes[parents[i]!]! += 1 + varintSize(size) + size;
  }
  // Children lists in node order (a counting sort by parent), for the write pass.
  const first = new Array<number>(count + 1).fill(0);
  for (let i = 1; i < count; i++) first[parents[i]! + 1]!++;
  for (let i = 0; i < count; i++) first[i + 1]! += first[i]!;
  const next = first.slice(0, count);
  const children = new Array<number>(count - 1);
  for (let i = 1; i < count; i++) children[next[parents[i]!]!++] = i;
  return { sizes, first, children };
}

function writeNode(buf: Buffer, pos: number, tree: TraceTree, layout: Layout, node: number): number {
  const shape = tree.shapes[node];
  if (shape !== undefined) pos = writeBytes(buf, pos, shape.head);
  else {
    const name = tree.names.size === 0 ? undefined : tree.names.get(node);
    if (name !== undefined) pos = writeStringField(buf, pos, 10, name);
  }
  const index = tree.indexes[node]!;
  if (index >= 0) {
    buf[pos++] = 16;
    pos = writeVarint(buf, pos, index);
  }
  const start = tree.starts[node]!;
  if (start >= 0) {
    buf[pos++] = 64;
    pos = writeVarint(buf, pos, start);
  }
  const end = tree.ends[node]!;
  if (end >= 0) {
    buf[pos++] = 72;
    pos = writeVarint(buf, pos, end);
  }
  const errors = tree.errors.size === 0 ? undefined : tree.errors.get(node);
  if (errors !== undefined) {
    for (const error of errors) {
      buf[pos++] = 90;
      pos = writeVarint(buf, pos, traceErrorSize(error));
      pos = writeTraceError(buf, pos, error);
    }
  }
  const { sizes, first, children } = layout;
  for (let c = first[node]!, last = first[node + 1]!; c < last; c++) {
    const child = children[c]!;
    buf[pos++] = 98;
    pos = writeVarint(buf, pos, sizes[child]!);
    pos = writeNode(buf, pos, tree, layout, child);
  }
  if (shape !== undefined) pos = writeBytes(buf, pos, shape.tail);
  return pos;
}

// A few bytes each: a loop beats a call into TypedArray.prototype.set.
function writeBytes(buf: Buffer, pos: number, bytes: Uint8Array): number {
  const length = bytes.length;
  for (let i = 0; i < length; i++) buf[pos + i] = bytes[i]!;
  return pos + length;
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
