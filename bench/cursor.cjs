// The cursor codec alone (bench/README.md, "Cursor codec"): microseconds per call of
// `CursorCodec.encode` / `decode` and of `pack` / `unpack`, for the position a
// no-sharing request seals (the last edge of a page of 100, with its `next`).
//
//   npm run build
//   taskset -c 1 node_modules/.bin/node bench/cursor.cjs              # this checkout's dist/
//   taskset -c 1 node_modules/.bin/node bench/cursor.cjs /tmp/before   # another build's dist/
//
// It loads tsc's single modules (dist/graphql/data/cursor.js …). Three rounds, each after
// a warm-up of a quarter of its calls; quote all three (the machine is shared).
'use strict';
const path = require('node:path');

const dist = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'dist'));
const { CursorCodec } = require(path.join(dist, 'graphql', 'data', 'cursor.js'));
const payload = require(path.join(dist, 'graphql', 'data', 'cursorPayload.js'));

const TENANT = 'be0c0000-0000-4000-8000-000000000001';
const position = {
  size: 100,
  index: 99,
  id: 'loc_0000000000000299',
  ref: 'cursor=bG9jXzAwMDAwMDAwMDAwMDAwMTk5&page_size=100',
  next: 'cursor=bG9jXzAwMDAwMDAwMDAwMDAwMjk5&page_size=100',
};
const codec = new CursorCodec(Buffer.from('k'.repeat(32)));
const cursor = codec.encode(TENANT, 'locations', position);
const packed = payload.pack(position);

let sink;
function microseconds(calls, fn) {
  for (let i = 0; i < calls / 4; i += 1) sink = fn();
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i += 1) sink = fn();
  return (Number(process.hrtime.bigint() - start) / 1e3 / calls).toFixed(2);
}

for (let round = 1; round <= 3; round += 1) {
  const figures = [
    ['encode', microseconds(200_000, () => codec.encode(TENANT, 'locations', position))],
    ['decode', microseconds(200_000, () => codec.decode(cursor, TENANT, 'locations', 'after'))],
    ['pack', microseconds(500_000, () => payload.pack(position))],
    // What encode calls since the in-place writer: no copy of the result.
    ...(payload.packShared ? [['packShared', microseconds(500_000, () => payload.packShared(position))]] : []),
    ['unpack', microseconds(500_000, () => payload.unpack(packed))],
  ];
  console.log(`round ${round}: ${figures.map(([name, us]) => `${name} ${us} us`).join(', ')}`);
}
if (sink === undefined) throw new Error('unreachable');
