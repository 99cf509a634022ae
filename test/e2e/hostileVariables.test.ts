import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { waitFor } from '../helpers/waitFor';

/**
 * Requests that ran a replica out of memory while the cost estimate read the raw
 * variables instead of what execution sees (docs: "Query limits"). The built server
 * as the image runs it: `node --max-semi-space-size=8 --max-old-space-size=256
 * dist/index.js` (demo mode: no identity needed, as for an attacker who reaches the port).
 */
const root = join(__dirname, '..', '..');
const entry = join(root, 'dist', 'index.js');
const SHIPPED_FLAGS = ['--max-semi-space-size=8', '--max-old-space-size=256'];

let child: ChildProcessWithoutNullStreams;
let exited = false;
let url: string;
let out = '';

beforeAll(async () => {
  if (!existsSync(entry)) throw new Error('dist/index.js is missing: run `npm run build` first (scripts/test.sh does)');
  child = spawn(process.execPath, [...SHIPPED_FLAGS, entry], { cwd: root, env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' } });
  child.stdout.on('data', (chunk) => (out += String(chunk)));
  child.stderr.on('data', (chunk) => (out += String(chunk)));
  child.on('exit', () => (exited = true));
  await waitFor(() => /GraphQL:\s+(http:\S+)/.test(out), 'the banner', 15_000);
  url = /GraphQL:\s+(http:\S+)/.exec(out)![1]!;
});

afterAll(async () => {
  if (!exited) {
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }
});

interface Answer {
  status: number;
  body: { data?: unknown; errors?: Array<{ message: string; extensions?: Record<string, unknown> }> };
}

async function post(body: string): Promise<Answer> {
  const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: response.statusCode, body: (await response.body.json()) as Answer['body'] };
}

async function heapUsedBytes(): Promise<number> {
  const text = await (await request(`${new URL(url).origin}/metrics`)).body.text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)![1]);
}

const NESTED = 'shifts(first: 100) { nodes { id location { shifts(first: 100) { nodes { id location { shifts(first: 100) { nodes { id start end nodeId } } } } } } } }';

it('refuses _entities given one object instead of a list before execution, with the estimate of the list of one it is', async () => {
  const single = await post(JSON.stringify({ query: `{ _entities(representations: {__typename: "Location", id: "loc_hlc_001"}) { ... on Location { ${NESTED} } } }` }));
  const listed = await post(JSON.stringify({ query: `{ _entities(representations: [{__typename: "Location", id: "loc_hlc_001"}]) { ... on Location { ${NESTED} } } }` }));
  for (const answer of [single, listed]) {
    expect(answer.status).toBe(400);
    expect(answer.body.data).toBeUndefined();
    expect(answer.body.errors?.[0]?.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', 'cost.estimated': expect.any(Number) });
  }
  expect(single.body.errors![0]!.extensions!['cost.estimated']).toBe(listed.body.errors![0]!.extensions!['cost.estimated']);
  expect(single.body.errors![0]!.extensions!['cost.estimated']).toBeGreaterThan(5_000_000);
});

it('keeps the heap flat over 80 requests whose page-size variable is a 475 KB list that does not coerce', async () => {
  const query = 'query Q($n: Int, $m: String) { locations(first: $n, after: $m) { pageInfo { hasNextPage } } }';
  // 95 000 numbers: under the 100 000 JSON values a body may have, so the list is parsed
  // and coercion refuses it (a 1 MB one is refused before it is parsed: below).
  const tail = ',1e20'.repeat(95_000);
  const send = async (i: number) => {
    const answer = await post(`{"query":${JSON.stringify(query)},"variables":{"n":[${i}${tail}]}}`);
    expect(answer.status).toBe(400);
    expect(answer.body.errors?.[0]?.extensions?.['code']).toBe('BAD_USER_INPUT');
  };
  for (let i = 0; i < 10; i++) await send(i);
  const before = await heapUsedBytes();
  for (let i = 10; i < 90; i++) await send(i);
  expect(exited).toBe(false);
  // What a request kept would show here: 48 requests of a 1 MB list grew it by 211 MiB
  // before, so these 80 of half as much would grow it by some 170 MiB (or run it out of
  // its 256 MiB first), over three times the 48 MiB allowed. The allowance is for garbage not yet collected, which
  // does not grow with the count: each body is a large object, swept at the next full GC.
  expect((await heapUsedBytes()) - before).toBeLessThan(48 * 2 ** 20);
  const fine = await post(JSON.stringify({ query, variables: { n: 2 } }));
  expect(fine.status).toBe(200);
}, 120_000);

it('answers a page-size variable of 99 000 nested arrays with 400 BAD_USER_INPUT, not a 500, and refuses 300 000 of them (or a 1 MB list) before parsing', async () => {
  const query = 'query Q($n: Int) { locations(first: $n) { pageInfo { hasNextPage } } }';
  const nested = (depth: number) => `{"query":${JSON.stringify(query)},"variables":{"n":${'['.repeat(depth)}1${']'.repeat(depth)}}}`;
  const answer = await post(nested(99_000));
  expect(answer.status).toBe(400);
  expect(answer.body.errors?.[0]?.extensions?.['code']).toBe('BAD_USER_INPUT');
  // Past the 100 000 JSON values a body may have: 413, counted as it arrives, never parsed.
  for (const body of [nested(300_000), `{"query":${JSON.stringify(query)},"variables":{"n":[0${',1e20'.repeat(200_000)}]}}`]) {
    const refused = await post(body);
    expect(refused.status).toBe(413);
    expect(refused.body.errors?.[0]?.extensions?.['code']).toBe('BAD_REQUEST');
  }
  expect(exited).toBe(false);
});

/** The nested bomb (refused alone) once went through beside `_entities` given a variable inside its list literal (docs/limits.md, "Query limits"). */
const BOMB = 'locations { nodes { shifts { nodes { location { shifts { nodes { id } } } } } } }';

it('refuses the nested bomb beside _entities(representations: [$r]) with the cost error, as it refuses the bomb alone', async () => {
  const alone = await post(JSON.stringify({ query: `{ ${BOMB} }` }));
  const beside = await post(JSON.stringify({ query: `query Q($r: _Any!) { _entities(representations: [$r]) { __typename } ${BOMB} }`, variables: { r: { __typename: 'Location', id: 'loc_hlc_001' } } }));
  expect(alone.body.errors?.[0]?.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', 'cost.estimated': 2_030_201, 'cost.max': 50_000 });
  expect(beside.status).toBe(400);
  expect(beside.body.data).toBeUndefined();
  // The bomb's estimate and the one entity's `__typename`.
  expect(beside.body.errors?.[0]?.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', 'cost.estimated': 2_030_201 + 1, 'cost.max': 50_000 });
});

it('refuses the bomb beside an _entities argument that fails alone (a null for a defaulted item variable): its siblings would still run', async () => {
  const answer = await post(JSON.stringify({ query: `query Q($r: _Any = {}) { ${BOMB} _entities(representations: [$r]) { __typename } }`, variables: { r: null } }));
  expect(answer.status).toBe(400);
  expect(answer.body.errors?.[0]?.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', 'cost.estimated': 2_030_201 + 1 });
});
