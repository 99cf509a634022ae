/**
 * The federated trace (`ftv1`) as protobuf bytes, written by hand.
 *
 * The message is Apollo's `Trace` (`@apollo/usage-reporting-protobuf`, `reports.proto`):
 * only the fields Apollo's inline-trace plugin sets, in field-number order as protobufjs
 * writes them, so the bytes match what `Trace.encode` makes of Apollo's own trace tree.
 * protobufjs builds the message with a chain of forked writers, one per node; here
 * the sizes are computed first (one walk of the tree) and the whole trace is written
 * into one Buffer (a second walk), which costs a fraction for the ~300 nodes of a page.
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

  constructor(responseName: string, type: string, parentType: string, originalFieldName: string | undefined) {
    this.head = Buffer.concat([stringField(10, responseName), stringField(26, type)]);
    this.tail = Buffer.concat([stringField(106, parentType), ...(originalFieldName === undefined ? [] : [stringField(114, originalFieldName)])]);
  }
}

/**
 * One node of the trace tree: a field (its shape), a list item (index), the root, or a
 * node an error's path named (response name). A class with every property set in the
 * constructor, so the ~300 nodes of a page share one shape; -1 stands for "not set".
 */
export class TraceNode {
  readonly shape: FieldShape | undefined;
  readonly responseName: string | undefined;
  readonly index: number;
  /** Nanoseconds since the trace started, or -1. */
  startNs = -1;
  endNs = -1;
  children: TraceNode[] | undefined = undefined;
  errors: TraceError[] | undefined = undefined;
  /** The encoded length of this node's content, set by the size pass. */
  size = 0;

  /** `key`: a response name, a list index, or undefined for the root; `shape`: a resolved field's. */
  constructor(key: string | number | undefined, shape?: FieldShape) {
    this.shape = shape;
    this.responseName = shape === undefined && typeof key === 'string' ? key : undefined;
    this.index = typeof key === 'number' ? key : -1;
  }

  addChild(child: TraceNode): void {
    if (this.children === undefined) this.children = [child];
    else this.children.push(child);
  }
}

/** What the trace message holds besides the tree. */
export interface TraceTimes {
  /** Wall-clock start and end, in milliseconds since the epoch. */
  readonly startMs: number;
  readonly endMs: number;
  readonly durationNs: number;
}

/** The `Trace` message for `root`, as one Buffer; `queryPlan`: an already encoded QueryPlanNode, if any. */
export function encodeTrace(root: TraceNode, times: TraceTimes, queryPlan?: Uint8Array): Buffer {
  const rootSize = nodeSize(root);
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
  pos = writeNode(buf, pos, root);
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

/** Content length of `node`; stores it (and its children's) in `size` for the write pass. */
function nodeSize(node: TraceNode): number {
  const shape = node.shape;
  let size = shape === undefined ? 0 : shape.head.length + shape.tail.length;
  if (node.responseName !== undefined) size += stringFieldSize(node.responseName);
  if (node.index >= 0) size += 1 + varintSize(node.index);
  if (node.startNs >= 0) size += 1 + varintSize(node.startNs);
  if (node.endNs >= 0) size += 1 + varintSize(node.endNs);
  const errors = node.errors;
  if (errors !== undefined) {
    for (let i = 0; i < errors.length; i++) {
      const errorSize = traceErrorSize(errors[i]!);
      size += 1 + varintSize(errorSize) + errorSize;
    }
  }
  const children = node.children;
  if (children !== undefined) {
    for (let i = 0; i < children.length; i++) {
      const childSize = nodeSize(children[i]!);
      size += 1 + varintSize(childSize) + childSize;
    }
  }
  node.size = size;
  return size;
}

function writeNode(buf: Buffer, pos: number, node: TraceNode): number {
  const shape = node.shape;
  if (shape !== undefined) pos = writeBytes(buf, pos, shape.head);
  if (node.responseName !== undefined) pos = writeStringField(buf, pos, 10, node.responseName);
  if (node.index >= 0) {
    buf[pos++] = 16;
    pos = writeVarint(buf, pos, node.index);
  }
  if (node.startNs >= 0) {
    buf[pos++] = 64;
    pos = writeVarint(buf, pos, node.startNs);
  }
  if (node.endNs >= 0) {
    buf[pos++] = 72;
    pos = writeVarint(buf, pos, node.endNs);
  }
  const errors = node.errors;
  if (errors !== undefined) {
    for (let i = 0; i < errors.length; i++) {
      const error = errors[i]!;
      buf[pos++] = 90;
      pos = writeVarint(buf, pos, traceErrorSize(error));
      pos = writeTraceError(buf, pos, error);
    }
  }
  const children = node.children;
  if (children !== undefined) {
    for (let i = 0; i < children.length; i++) {
      const child = children[i]!;
      buf[pos++] = 98;
      pos = writeVarint(buf, pos, child.size);
      pos = writeNode(buf, pos, child);
    }
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
