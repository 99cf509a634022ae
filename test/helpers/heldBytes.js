/**
 * Run as `node --expose-gc test/helpers/heldBytes.js`, with a JSON array of
 * `[name, text]` on stdin: prints, as JSON, the heap one parsed copy of each text holds
 * (graphql-js's `parse`, as Apollo Server keeps it), measured over 100 copies, each with
 * its own trailing comment as distinct documents have.
 *
 * In a process of its own, not in a jest worker: a worker's heap holds what the suites
 * before it left behind and lets it go over the next turns (once 170 MB between two
 * readings, so that a shape measured less than nothing), and each full collection of it
 * costs a hundred times one of this small heap.
 */
const { parse } = require('graphql');

/**
 * The heap in use once it has settled: full collections (`gc`), a turn of the event loop
 * apart, until two readings agree within `tolerance` bytes. documentMemory.test.ts reads
 * its own jest worker's heap with it too.
 */
async function settledHeap(gc, tolerance) {
  let last = Number.NaN;
  for (let i = 0; i < 20; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    const now = process.memoryUsage().heapUsed;
    if (Math.abs(now - last) < tolerance) return now;
    last = now;
  }
  throw new Error(`the heap did not settle after 20 collections (last read ${last} bytes)`);
}

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const shapes = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const held = {};
  // Each shape's copies stay kept while the next shape's are parsed: the reading after
  // one shape is the one before the next.
  const kept = [];
  let before = await settledHeap(globalThis.gc, 64 * 1024);
  for (const [name, text] of shapes) {
    const copies = [];
    for (let i = 0; i < 100; i++) copies.push(parse(`${text} # ${i}`, { maxTokens: 5_000 }));
    kept.push(copies);
    const after = await settledHeap(globalThis.gc, 64 * 1024);
    held[name] = (after - before) / copies.length;
    before = after;
  }
  process.stdout.write(JSON.stringify(held));
}

module.exports = { settledHeap };

if (require.main === module) {
  main().catch((error) => {
    process.stderr.write(String(error?.stack ?? error));
    process.exitCode = 1;
  });
}
