import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'graphql';
import { request } from 'undici';
import { makeTenant } from '../../tools/emulator';
import { DOCUMENT_STORE_BYTES, createDocumentStore, documentBytes } from '../../src/graphql/server/documentStore';
import { exposedGc } from '../helpers/gcMetrics';
import { settledHeap } from '../helpers/heldBytes';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * What clients send cannot fill the heap: the parsed documents Apollo Server keeps
 * (and the query texts of automatic persisted queries) are bounded by the memory they
 * really hold. Apollo's default store counted a document by its JSON, which leaves out
 * the source text graphql-js keeps: a valid `{ __typename }` with a 900 KB comment
 * counted 200 bytes and kept 900 KB, and 250 of them grew the heap by 216 MiB.
 */
const gc = exposedGc();
/** The heap in use once it has settled (one collection is not enough in a jest worker: the suite before this one in the same worker is let go over the next turns). */
const heapUsed = (): Promise<number> => settledHeap(gc, 256 * 1024);
const MiB = 2 ** 20;

const A = makeTenant({ tenantId: 'dddddddd-0000-4000-8000-00000000000d', clientId: 'client-doc', clientSecret: 'secret-doc-memory-1', grantedScopes: ['shifts.read'], shard: 0, locationCount: 3, shiftCount: 3 });

let subgraph: TestSubgraph;
beforeAll(async () => {
  subgraph = await startTestSubgraph({ tenants: [A] });
});
afterAll(async () => {
  await subgraph.close();
});

async function post(body: unknown): Promise<{ status: number; json: any }> {
  const response = await request(subgraph.server.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': A.tenantId }, body: JSON.stringify(body) });
  return { status: response.statusCode, json: await response.body.json() };
}

describe('documentBytes', () => {
  const operationsDir = join(__dirname, '..', '..', 'operations');
  const shapes: Array<[string, string]> = [
    ['one field repeated 500 times', `{ ${'__typename '.repeat(500)}}`],
    ['a 20 KB comment', `# ${'x'.repeat(20_000)}\n{ __typename }`],
    ['a 3 KB string argument', `{ location(id: "${'x'.repeat(3_000)}") { id } }`],
    ['variables, a connection and its page info', 'query Q($a: String, $c: Int) { locations(first: $c, after: $a) { nodes { id name } pageInfo { hasNextPage endCursor } } }'],
    ...readdirSync(operationsDir)
      .filter((file) => file.endsWith('.graphql'))
      .map((file): [string, string] => [`operations/${file}`, readFileSync(join(operationsDir, file), 'utf8')]),
  ];

  /** The heap one parsed copy of each shape holds (test/helpers/heldBytes.js measures it in a small process of its own). */
  let held: Record<string, number>;
  beforeAll(() => {
    const run = spawnSync(process.execPath, ['--expose-gc', join(__dirname, '..', 'helpers', 'heldBytes.js')], { input: JSON.stringify(shapes), encoding: 'utf8', timeout: 60_000 });
    if (run.status !== 0) throw new Error(`test/helpers/heldBytes.js failed (${run.signal ?? `exit ${run.status}`}): ${run.stderr}`);
    held = JSON.parse(run.stdout) as Record<string, number>;
  });

  it.each(shapes)('is at least what %s holds, and at most 6 times it', (name, text) => {
    const estimate = documentBytes(parse(`${text} # 0`, { maxTokens: 5_000 }));
    expect(estimate).toBeGreaterThanOrEqual(held[name]!);
    expect(estimate).toBeLessThanOrEqual(6 * held[name]!);
  });

  it('evicts the least recently used documents once their bytes pass the bound', async () => {
    const store = createDocumentStore(100_000);
    const documents = Array.from({ length: 10 }, (_, i) => parse(`{ a${i}: __typename } # ${'z'.repeat(10_000)}`));
    for (const [i, document] of documents.entries()) await store.set(`d${i}`, document);
    // Each holds about 20 KB of source: only the last few fit in 100 KB.
    expect(await store.get('d0')).toBeUndefined();
    expect(await store.get('d9')).toBe(documents[9]);
    expect(documents.slice(0, 10).reduce((sum, document) => sum + documentBytes(document), 0)).toBeGreaterThan(100_000);
  });
});

describe('parsed documents and persisted queries', () => {
  it('60 distinct valid documents of 900 KB each (a comment) leave the heap within the store bound', async () => {
    const before = await heapUsed();
    for (let i = 0; i < 60; i++) {
      const answer = await post({ query: `{ __typename } # ${i} ${'y'.repeat(900_000)}` });
      expect(answer.status).toBe(200);
      expect(answer.json.data).toEqual({ __typename: 'Query' });
    }
    const grown = (await heapUsed()) - before;
    // Unbounded: 60 x 900 KB = 51 MiB, 11 MiB over the most allowed here. The store's
    // bound is an upper estimate of 32 MiB (2 bytes a character: 18 such documents).
    expect(grown).toBeLessThan(DOCUMENT_STORE_BYTES + 4 * MiB);
    expect(grown).toBeLessThan(40 * MiB);
  });

  it('still serves a document from the store, and automatic persisted queries by hash', async () => {
    const query = '{ locations(first: 2) { nodes { id } } }';
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    const unknown = await post({ extensions: { persistedQuery: { version: 1, sha256Hash } } });
    expect(unknown.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const registered = await post({ query, extensions: { persistedQuery: { version: 1, sha256Hash } } });
    expect(registered.json.data.locations.nodes).toHaveLength(2);
    const byHash = await post({ extensions: { persistedQuery: { version: 1, sha256Hash } } });
    expect(byHash.json.data.locations.nodes).toHaveLength(2);
  });

  it('answers a persisted query whose hash is not the query\'s with HTTP 400 BAD_REQUEST that says what to send', async () => {
    const wrong = await post({ query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: 'ab'.repeat(32) } } });
    expect(wrong.status).toBe(400);
    expect(wrong.json.errors).toHaveLength(1);
    expect(wrong.json.errors[0].extensions.code).toBe('BAD_REQUEST');
    expect(wrong.json.errors[0].message).toMatch(/not the SHA-256 of the query/);
  });
});
