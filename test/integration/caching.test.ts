import { createDecipheriv, hkdfSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from 'graphql-ws';
import type { Counter } from 'prom-client';
import { request } from 'undici';
import { unpack } from '../../src/graphql/data/cursorPayload';
import { encodeNodeId } from '../../src/graphql/data/node';
import { createSubgraphSchema } from '../../src/graphql/server/schema';
import { as, testTenant } from '../helpers/fixtures';
import { collect, liveClient } from '../helpers/liveClient';
import { randomDocument } from '../helpers/randomDocument';
import { seeded } from '../helpers/seeded';
import { livePolls, startTestSubgraph, subscribedAndPolled, TEST_CURSOR_SECRET, type GraphQLResponse, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';
import { measureFreshness, observe, pendingEdit, summarize } from '../../tools/probes/freshnessProbe';

/**
 * Answers that may be kept (docs/caching.md), over real HTTP against the emulator: a
 * page read again within WFS_FRESHNESS_SECONDS costs no upstream call, never crosses
 * companies, and every answer says how long a gateway may keep it. The clock the
 * subgraph's lifetimes run on is the test's (`now`), so ages are set, not waited for.
 */

const A = testTenant('a', { locations: 30, shifts: 40 });
const B = testTenant('b', { locations: 30, shifts: 40 });

const LOCATIONS = '{ locations(first: 10) { nodes { id name } } }';

let subgraph: TestSubgraph | undefined;
let clock = 0;
const now = () => clock;

afterEach(async () => {
  await subgraph?.close();
  subgraph = undefined;
});

async function start(env: Record<string, string> = {}, defaultTenant?: string): Promise<TestSubgraph> {
  clock = Date.now();
  subgraph = await startTestSubgraph({ tenants: [A, B] }, env, { now, ...(defaultTenant && { defaultTenant }) });
  return subgraph;
}

const wholeAnswers = (result: 'hit' | 'miss') => counterTotal(subgraph!.server.metrics.registry.getSingleMetric('wfs_cache_requests_total') as Counter<string>, { cache: 'whole_answers', result });
const calls = (list: 'locations' | 'shifts') => subgraph!.emulator.counters.listRequests[list];
const cacheControl = (response: GraphQLResponse) => response.headers?.['cache-control'];
const names = (response: GraphQLResponse<any>) => response.data.locations.nodes.map((node: { name: string }) => node.name);

describe('a page read again within the window', () => {
  it('is served from memory (no upstream call) for the same company, and never to another', async () => {
    await start({ WFS_FRESHNESS_SECONDS: '30' });
    const first = await subgraph!.query(LOCATIONS, {}, as(A));
    expect(first.errors).toBeUndefined();
    expect(calls('locations')).toBe(1);
    const again = await subgraph!.query(LOCATIONS, {}, as(A));
    expect(again.data).toEqual(first.data);
    expect(calls('locations')).toBe(1);
    // The second read was served from the kept page, and its answer kept whole (asked twice
    // within the window); the third is answered whole, before execution, and still counted
    // and logged as a request.
    expect([await wholeAnswers('hit'), await wholeAnswers('miss')]).toEqual([0, 2]);
    const third = await subgraph!.query(LOCATIONS, {}, as(A));
    expect(third.data).toEqual(first.data);
    expect([await wholeAnswers('hit'), await wholeAnswers('miss')]).toEqual([1, 2]);
    expect(await counterTotal(subgraph!.server.metrics.registry.getSingleMetric('wfs_graphql_requests_total') as Counter<string>, { operation_type: 'query' })).toBe(3);
    const lines = subgraph!.logs.map((line) => JSON.parse(line) as { event?: string; wholeAnswer?: boolean; tenantId?: string }).filter((line) => line.event === 'graphql_request');
    expect(lines.map((line) => [line.tenantId, line.wholeAnswer ?? false])).toEqual([
      [A.tenantId, false],
      [A.tenantId, false],
      [A.tenantId, true],
    ]);

    // Company B asks the same, byte for byte: its own page, from the upstream, never A's answer kept whole.
    const other = await subgraph!.query(LOCATIONS, {}, as(B));
    expect(calls('locations')).toBe(2);
    expect(names(other)).toEqual(B.locations.slice(0, 10).map((l) => l.name));
    expect(names(other)).not.toEqual(names(first));
    expect([await wholeAnswers('hit'), await wholeAnswers('miss')]).toEqual([1, 3]);
    // An identity refused gets its refusal, not an answer kept.
    const refused = await subgraph!.query(LOCATIONS, {}, { 'x-tenant-id': 'nobody' });
    expect(refused.errors?.[0]?.extensions?.code).toBeDefined();
    expect(refused.data?.locations ?? null).toBeNull();
    // Other arguments are another page.
    await subgraph!.query('{ locations(first: 11) { nodes { id } } }', {}, as(A));
    expect(calls('locations')).toBe(3);
  });

  it('is as old as the window at most: max-age counts down, and the page is read again when it ends', async () => {
    await start({ WFS_FRESHNESS_SECONDS: '30' });
    const first = await subgraph!.query(LOCATIONS, {}, as(A));
    expect(cacheControl(first)).toBe('private, max-age=30');
    clock += 10_500;
    const later = await subgraph!.query(LOCATIONS, {}, as(A));
    expect(calls('locations')).toBe(1);
    expect(cacheControl(later)).toBe('private, max-age=19');
    clock += 1_000;
    // Answered whole (kept when asked the second time): its max-age counted from the kept answer's own end.
    expect(cacheControl(await subgraph!.query(LOCATIONS, {}, as(A)))).toBe('private, max-age=18');
    expect(await wholeAnswers('hit')).toBe(1);
    clock += 18_600;
    const expired = await subgraph!.query(LOCATIONS, {}, as(A));
    expect(calls('locations')).toBe(2);
    expect(cacheControl(expired)).toBe('private, max-age=30');
  });

  it('is answered whole in its last second as the plain path answers it then (no-store, untagged), and kept again at once after its end', async () => {
    await start({ WFS_FRESHNESS_SECONDS: '5' });
    const url = subgraph!.server.url;
    const post = async () => {
      const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...as(A) }, body: JSON.stringify({ query: LOCATIONS }) });
      return { cacheControl: response.headers['cache-control'], text: await response.body.text() };
    };
    // A GET is always executed: the plain path, from the same kept page.
    const plain = async () => {
      const response = await request(`${url}?query=${encodeURIComponent(LOCATIONS)}`, { headers: { 'apollo-require-preflight': 'true', ...as(A) } });
      return { cacheControl: response.headers['cache-control'], text: await response.body.text() };
    };
    const first = await post();
    await post();
    expect(calls('locations')).toBe(1);
    expect(JSON.parse(first.text).extensions.apolloCacheTags).toHaveLength(1);
    clock += 4_400;
    // 600 ms left: max-age would be 0. The plain path marks the kept page's answer no-store
    // and tags nothing; the answer kept whole serves exactly that, without executing.
    const hits = await wholeAnswers('hit');
    const lastSecond = await post();
    expect(await wholeAnswers('hit')).toBe(hits + 1);
    expect(lastSecond).toEqual(await plain());
    expect(lastSecond.cacheControl).toBe('no-store');
    expect(JSON.parse(lastSecond.text)).toEqual({ data: JSON.parse(first.text).data });
    expect(calls('locations')).toBe(1);
    // Its end: read upstream again, and the answer kept at once (it was asked often), not at the next asking.
    clock += 700;
    expect((await post()).cacheControl).toBe('private, max-age=5');
    expect(calls('locations')).toBe(2);
    const hitsAfter = await wholeAnswers('hit');
    expect((await post()).text).toBe(first.text);
    expect(await wholeAnswers('hit')).toBe(hitsAfter + 1);
  });

  it("is as old as the oldest data the answer used: an entity-index read counts", async () => {
    await start({ WFS_FRESHNESS_SECONDS: '30' });
    const id = A.locations[25]!.id;
    expect(cacheControl(await subgraph!.query(`{ location(id: "${id}") { name } }`, {}, as(A)))).toBe('private, max-age=30');
    clock += 20_000;
    // A page read upstream now, and a record the index has held for 20 s: 10 s left.
    const mixed = await subgraph!.query(`{ shifts(first: 2) { nodes { id } } location(id: "${id}") { name } }`, {}, as(A));
    expect(mixed.errors).toBeUndefined();
    expect(cacheControl(mixed)).toBe('private, max-age=10');
    expect(cacheControl(await subgraph!.query('{ shifts(first: 2) { nodes { id } } }', {}, as(A)))).toBe('private, max-age=30');
  });

  it('with WFS_FRESHNESS_SECONDS=0, always goes upstream and is no-store', async () => {
    await start({ WFS_FRESHNESS_SECONDS: '0' });
    for (let i = 1; i <= 3; i++) {
      const response = await subgraph!.query(LOCATIONS, {}, as(A));
      expect(response.errors).toBeUndefined();
      expect(cacheControl(response)).toBe('no-store');
      expect(response.extensions?.apolloCacheTags).toBeUndefined();
      expect(calls('locations')).toBe(i);
    }
  });
});

describe('the cache policy of each kind of answer', () => {
  it('tags a company answer by company and list, the company not in clear', async () => {
    await start({ WFS_FRESHNESS_SECONDS: '30' });
    const a = await subgraph!.query('{ shifts(first: 3) { nodes { id location { name } } } }', {}, as(A));
    const tags = a.extensions?.apolloCacheTags as string[];
    expect(tags).toHaveLength(2);
    expect(tags.map((tag) => tag.split(':')[1]).sort()).toEqual(['locations', 'shifts']);
    expect(JSON.stringify(a.extensions)).not.toContain(A.tenantId);
    const b = await subgraph!.query(LOCATIONS, {}, as(B));
    expect((b.extensions?.apolloCacheTags as string[])[0]!.split(':')[0]).not.toBe(tags[0]!.split(':')[0]);
  });

  it('tags each _entities item with its list and record', async () => {
    await start({ WFS_FRESHNESS_SECONDS: '30' });
    const ids = [A.locations[3]!.id, A.locations[20]!.id];
    const response = await subgraph!.query('query ($r: [_Any!]!) { _entities(representations: $r) { ... on Location { name } } }', { r: ids.map((id) => ({ __typename: 'Location', id })) }, as(A));
    expect(response.errors).toBeUndefined();
    expect(cacheControl(response)).toBe('private, max-age=30');
    const tags = response.extensions?.apolloEntityCacheTags as string[][];
    expect(tags).toHaveLength(2);
    const listTag = tags[0]![0]!;
    expect(tags).toEqual([
      [listTag, `${listTag}:${ids[0]}`],
      [listTag, `${listTag}:${ids[1]}`],
    ]);
    expect(response.extensions?.apolloCacheTags).toBeUndefined();
  });

  it('is no-store for an error, introspection, _service and a company refused', async () => {
    await start({ WFS_FRESHNESS_SECONDS: '30' });
    const error = await subgraph!.query(`{ location(id: "x") { name } locations(first: 0) { nodes { id } } }`, {}, as(A));
    expect(error.errors?.length).toBeGreaterThan(0);
    expect(cacheControl(error)).toBe('no-store');
    expect(cacheControl(await subgraph!.query('{ __schema { queryType { name } } }'))).toBe('no-store');
    expect(cacheControl(await subgraph!.query('{ _service { sdl } }'))).toBe('no-store');
    const refused = await subgraph!.query(LOCATIONS, {}, { 'x-tenant-id': 'nobody' });
    expect(refused.errors?.length).toBeGreaterThan(0);
    expect(cacheControl(refused)).toBe('no-store');
  });

  it("is no-store for demo mode's default tenant (a request that named no company)", async () => {
    await start({ WFS_FRESHNESS_SECONDS: '30' }, A.tenantId);
    const unnamed = await subgraph!.query(LOCATIONS);
    expect(unnamed.extensions?.demoTenant).toBe(A.tenantId);
    expect(cacheControl(unnamed)).toBe('no-store');
    expect(unnamed.extensions?.apolloCacheTags).toBeUndefined();
    expect(cacheControl(await subgraph!.query(LOCATIONS, {}, as(A)))).toBe('private, max-age=30');
    // The named company's answer is kept whole now (asked twice); a request naming none still never gets it.
    expect(cacheControl(await subgraph!.query(LOCATIONS, {}, as(A)))).toBe('private, max-age=30');
    expect(cacheControl(await subgraph!.query(LOCATIONS, {}, as(A)))).toBe('private, max-age=30');
    expect(await wholeAnswers('hit')).toBe(1);
    expect(cacheControl(await subgraph!.query(LOCATIONS))).toBe('no-store');
    expect(await wholeAnswers('hit')).toBe(1);
  });
});

describe('one record read five ways', () => {
  const target = A.locations[2]!;
  const ways: Record<string, (s: TestSubgraph) => Promise<string | undefined>> = {
    locations: async (s) => (await s.query(LOCATIONS, {}, as(A))).data?.locations.nodes.find((n: { id: string }) => n.id === target.id)?.name,
    location: async (s) => (await s.query(`{ location(id: "${target.id}") { name } }`, {}, as(A))).data?.location?.name,
    node: async (s) => (await s.query(`{ node(nodeId: "${encodeNodeId('Location', target.id)}") { ... on Location { name } } }`, {}, as(A))).data?.node?.name,
    'Shift.location': async (s) => {
      const r = await s.query('{ shifts(first: 40) { nodes { location { id name } } } }', {}, as(A));
      if (!r.data?.shifts) throw new Error(JSON.stringify(r.errors));
      const shifts = r.data.shifts.nodes as Array<{ location: { id: string; name: string } | null }>;
      return shifts.find((shift) => shift.location?.id === target.id)?.location?.name;
    },
    _entities: async (s) =>
      (await s.query('query ($r: [_Any!]!) { _entities(representations: $r) { ... on Location { name } } }', { r: [{ __typename: 'Location', id: target.id }] }, as(A))).data?._entities[0]?.name,
  };
  /**
   * Edits the record upstream again and again, and after each edit reads it the five ways,
   * each way read twice within the window, in orders that put each way first in turn
   * (and backwards the second time). Whatever the order, two rules hold: before any way
   * has shown an edit every way reads the same version, and once one way has shown it no
   * way reads the old one again. The window is 10 s, not the index's own 30 s default:
   * a lifetime that ignored the window would still show the old version past it.
   */
  it('never reads differently once one way has shown the upstream change, whichever way reads first', async () => {
    const windowMs = 10_000;
    await start({ WFS_FRESHNESS_SECONDS: String(windowMs / 1000) });
    expect(A.shifts.some((shift) => shift.location === target.id)).toBe(true);
    const original = target.name;
    const names = Object.keys(ways);
    const readAll = async (order: string[]) => {
      const seen: Array<[string, string | undefined]> = [];
      for (const way of order) {
        seen.push([way, await ways[way]!(subgraph!)]);
        clock += 250;
      }
      return seen;
    };
    let shown = original;
    expect(new Set((await readAll(names)).map(([, name]) => name))).toEqual(new Set([shown]));
    try {
      for (let edit = 1; edit <= names.length + 1; edit++) {
        target.name = `${original} (edit ${edit})`;
        const hitsBefore = await wholeAnswers('hit');
        // Within the window, from memory: every way still agrees on the version shown last.
        expect(new Set((await readAll(names)).map(([, name]) => name))).toEqual(new Set([shown]));
        const first = names[(edit - 1) % names.length]!;
        if (edit <= names.length) {
          // The window passes: the first way to read (each in turn) goes upstream and shows the edit.
          clock += windowMs + 1;
        } else {
          // Every way was just answered whole, kept before this edit (answers kept whole
          // are on with any window): the change a page read shows must end them too.
          expect(await wholeAnswers('hit')).toBeGreaterThanOrEqual(hitsBefore + names.length);
          // Within the window: a read the memory cannot answer (another page size) goes upstream and shows it.
          const fresh = await subgraph!.query('{ locations(first: 20) { nodes { id name } } }', {}, as(A));
          expect(fresh.data?.locations.nodes[2].name).toBe(target.name);
        }
        shown = target.name;
        const order = [...names.slice(names.indexOf(first)), ...names.slice(0, names.indexOf(first))];
        // From then on, within one window, every way shows it, first or not, again and again.
        const reads = [...(await readAll(order)), ...(await readAll([...order].reverse()))];
        expect(reads).toEqual([...order, ...[...order].reverse()].map((way) => [way, shown]));
      }
    } finally {
      target.name = original;
    }
  });
});

describe('answers kept whole', () => {
  /**
   * The differential test of answers kept whole (http/wholeAnswers.ts) against the plain
   * path: DOCUMENTS random documents and variables (test/helpers/randomDocument.ts, the
   * compiled-execution differential's generator, seed fixed), each asked of a subgraph
   * with a window of 30 s (answers kept whole on) three times for its company (an answer
   * is kept the second time it is asked), and once in between for the other company,
   * byte for byte the same request; and of a subgraph
   * with the window at 0 (nothing kept) on the same emulator, the same upstream state.
   * Data and errors must be the same (errors sorted, as graphql-js may list them in
   * another order), cursors opened to their positions: each answer seals its own with a
   * fresh nonce, and a kept one repeats the ones it was written with. Every answer the
   * cache policy marked `private` must be a hit the third time.
   */
  const DOCUMENTS = 100;
  it(`answers ${DOCUMENTS} generated documents, for two companies, as the plain path does, the third time from memory`, async () => {
    await start({ WFS_FRESHNESS_SECONDS: '30' });
    const plain = await startTestSubgraph({}, { WFS_FRESHNESS_SECONDS: '0' }, {}, subgraph!.emulator);
    try {
      const schema = createSubgraphSchema();
      const cursors = await subgraph!.query('{ locations(first: 2) { pageInfo { startCursor endCursor } } shifts(first: 3) { edges { cursor } } }', {}, as(A));
      const values = { cursors: [cursors.data.locations.pageInfo.startCursor, cursors.data.locations.pageInfo.endCursor, ...cursors.data.shifts.edges.map((edge: { cursor: string }) => edge.cursor)] };
      const domain = {
        locationIds: [...A.locations.slice(0, 4), ...B.locations.slice(0, 2)].map((l) => l.id),
        shiftIds: [...A.shifts.slice(0, 6), ...B.shifts.slice(0, 2)].map((s) => s.id),
        tenants: [A.tenantId, A.tenantId, B.tenantId, B.tenantId, 'nobody', ''],
      };
      const headersOf = (tenant: string): Record<string, string> => (tenant ? { 'x-tenant-id': tenant } : {});
      const random = seeded(20261128);
      const differences: string[] = [];
      let kept = 0;
      for (let i = 0; i < DOCUMENTS; i++) {
        const { query, variables, tenant } = randomDocument(schema, random, values, domain);
        const other = tenant === A.tenantId ? B.tenantId : tenant === B.tenantId ? A.tenantId : undefined;
        const first = await subgraph!.query(query, variables, headersOf(tenant));
        const otherFirst = other === undefined ? undefined : await subgraph!.query(query, variables, headersOf(other));
        // Asked a second time: its answer is kept whole (nginx-like, not the first time).
        await subgraph!.query(query, variables, headersOf(tenant));
        const hits = await wholeAnswers('hit');
        const second = await subgraph!.query(query, variables, headersOf(tenant));
        const cacheable = String(cacheControl(first)).startsWith('private');
        if (cacheable) kept++;
        if ((await wholeAnswers('hit')) !== hits + (cacheable ? 1 : 0)) differences.push(`document ${i}: the third read ${cacheable ? 'was not' : 'was'} answered whole\n${query}`);
        const otherSecond = other === undefined ? undefined : await subgraph!.query(query, variables, headersOf(other));
        const expected = comparable(await plain.query(query, variables, headersOf(tenant)));
        for (const [label, answer] of [['first', first], ['second', second]] as const) {
          if (comparable(answer) !== expected) differences.push(`document ${i} (${label}, tenant "${tenant}"):\n${query}\nvariables ${JSON.stringify(variables)}\nkept:  ${comparable(answer)}\nplain: ${expected}`);
        }
        if (other === undefined) continue;
        const expectedOther = comparable(await plain.query(query, variables, headersOf(other)));
        for (const [label, answer] of [['first', otherFirst], ['second', otherSecond]] as const) {
          if (comparable(answer!) !== expectedOther) differences.push(`document ${i} (${label}, other company):\n${query}\nkept:  ${comparable(answer!)}\nplain: ${expectedOther}`);
        }
      }
      expect(differences.slice(0, 3)).toEqual([]);
      // Both paths were taken often: answers kept and answered whole, and answers never kept (errors, refused identities).
      expect(kept).toBeGreaterThan(DOCUMENTS * 0.25);
      expect(kept).toBeLessThan(DOCUMENTS * 0.9);
    } finally {
      await plain.close();
    }
  });
});

/** The key cursors are sealed with (src/graphql/data/cursor.ts, from the test's WFS_CURSOR_SECRET). */
const cursorKey = Buffer.from(hkdfSync('sha256', Buffer.from(TEST_CURSOR_SECRET, 'utf8'), 'wfs-cursor', 'aes-256-gcm v1', 32));

/**
 * A cursor opened to its position, or undefined for a string that is none. AES-GCM is a
 * stream cipher: the text opens without its tag (which binds tenant, list and scope, and
 * is not checked here); the position inside is what a cursor means.
 */
function openCursor(text: string): string | undefined {
  if (!/^[\w-]{16}\.[\w-]{17,}$/.test(text)) return undefined;
  const whole = Buffer.from(text.replace('.', ''), 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', cursorKey, whole.subarray(0, 12), { authTagLength: 12 });
  try {
    return `cursor ${JSON.stringify(unpack(decipher.update(whole.subarray(12, whole.length - 12))))}`;
  } catch {
    return undefined;
  }
}

/** Data and errors of an answer as compared: cursors opened, errors sorted. */
function comparable(answer: GraphQLResponse): string {
  const opened = JSON.parse(JSON.stringify({ data: answer.data ?? null, errors: answer.errors ?? [] }), (_key, value: unknown) => (typeof value === 'string' ? (openCursor(value) ?? value) : value)) as { data: unknown; errors: unknown[] };
  return JSON.stringify({ data: opened.data, errors: opened.errors.map((error) => JSON.stringify(error)).sort() });
}

describe('a change a live poll sees', () => {
  it("drops the company's kept pages at once and is POSTed to the invalidation endpoints, with the key", async () => {
    const received: Array<{ url: string; authorization: string | undefined; body: unknown }> = [];
    const endpoint = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += String(chunk)));
      req.on('end', () => {
        received.push({ url: req.url ?? '', authorization: req.headers.authorization, body: JSON.parse(text) });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"count":1}');
      });
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    const port = (endpoint.address() as AddressInfo).port;
    const key = 'invalidation-key-0123456789abcdef';
    let live: Client | undefined;
    try {
      clock = Date.now();
      subgraph = await startTestSubgraph(
        { tenants: [A, B] },
        { WFS_FRESHNESS_SECONDS: '300', WFS_CACHE_INVALIDATION_URLS: `http://127.0.0.1:${port}/invalidation`, WFS_CACHE_INVALIDATION_KEY: key },
        { now, live: { pollIntervalMs: 100 } },
      );
      const kept = await subgraph.query(LOCATIONS, {}, as(A));
      const listTag = (kept.extensions?.apolloCacheTags as string[])[0]!;
      expect(cacheControl(kept)).toBe('private, max-age=300');

      const pollsBefore = await livePolls(subgraph.server);
      live = liveClient(subgraph.server.url, as(A));
      const changes = collect(live, 'subscription { locationChanges { kind location { id name } } }');
      await subscribedAndPolled(subgraph.server, pollsBefore);

      const target = A.locations[4]!;
      const old = target.name;
      target.name = `${old} (moved)`;
      try {
        await waitFor(() => changes.results.length > 0, 'the change delivered');
        await waitFor(() => received.length > 0, 'the invalidation POST');
        expect(received[0]).toEqual({ url: '/invalidation', authorization: key, body: [{ kind: 'cache_tag', subgraphs: ['wfs'], cache_tag: listTag }] });
        // The kept page went with the change: the next read, within the window, misses and
        // goes upstream. Counted by the kept-page misses, not by the emulator's list calls,
        // which also count the poller's walks every 100 ms.
        const keptPages = async (result: 'hit' | 'miss') => counterTotal(subgraph!.server.metrics.registry.getSingleMetric('wfs_cache_requests_total') as Counter<string>, { cache: 'kept_pages', result });
        const [hitsBefore, missesBefore] = [await keptPages('hit'), await keptPages('miss')];
        const after = await subgraph.query(LOCATIONS, {}, as(A));
        expect(names(after)[4]).toBe(target.name);
        expect([await keptPages('hit'), await keptPages('miss')]).toEqual([hitsBefore, missesBefore + 1]);
        expect(await counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_cache_invalidations_total') as Counter<string>, { outcome: 'sent' })).toBeGreaterThanOrEqual(1);
      } finally {
        target.name = old;
      }
    } finally {
      await live?.dispose();
      await subgraph?.close();
      subgraph = undefined;
      endpoint.close();
    }
  });
});

describe('a list read often (watched by the live pollers)', () => {
  const PAGE = 'query ($after: String) { locations(first: 1, after: $after) { nodes { id name } pageInfo { endCursor } } }';
  const metric = (name: string, labels: Record<string, string> = {}) => counterTotal(subgraph!.server.metrics.registry.getSingleMetric(name) as Counter<string>, labels);
  const confirmations = () => metric('wfs_cache_confirmations_total', { result: 'extended' });
  const keptPages = (result: 'hit' | 'miss') => metric('wfs_cache_requests_total', { cache: 'kept_pages', result });
  /** Reads A's 30 locations a page (of one) at a time, from `cursors` (the walk's own the first time): what each answer said. */
  async function readAllPages(cursors: Array<string | null>): Promise<Array<{ name: string; maxAge: string }>> {
    const seen = [];
    for (let i = 0; i < A.locations.length; i++) {
      const page = await subgraph!.query(PAGE, { after: cursors[i] }, as(A));
      expect(page.errors).toBeUndefined();
      cursors[i + 1] ??= page.data.locations.pageInfo.endCursor;
      seen.push({ name: page.data.locations.nodes[0].name as string, maxAge: String(cacheControl(page)) });
    }
    return seen;
  }
  /** Moves the clock by `ms` (less than the window) and waits for a poll that began after it: two confirmations, polls being one after another. */
  async function advanceConfirmed(ms: number): Promise<void> {
    clock += ms;
    const before = await confirmations();
    await waitFor(async () => (await confirmations()) >= before + 2, 'a poll after the clock moved confirmed what is kept');
  }

  it('is watched, served past the window while polls confirm it, shares one poller with subscribers, and shows an edit after the next poll', async () => {
    clock = Date.now();
    // Window 1 s, polls every 100 ms: a period is 1 s, one walk of the list (one call) costs
    // 10 calls a period, so 20 pages read again after the window within a period start
    // the watching. The first reads weigh nothing: they cost their calls watched or not.
    subgraph = await startTestSubgraph({ tenants: [A, B] }, { WFS_FRESHNESS_SECONDS: '1' }, { now, live: { pollIntervalMs: 100 } });
    const hub = subgraph.server.live;
    const cursors: Array<string | null> = [null];
    await readAllPages(cursors);
    expect(hub.pollers).toBe(0);
    clock += 1_100;
    const started = clock;
    await readAllPages(cursors);
    expect(hub.reasonFor(A.tenantId, 'locations')).toBe('watched');
    expect(await metric('wfs_live_pollers', { reason: 'watched' })).toBe(1);
    await waitFor(async () => (await confirmations()) >= 2, 'polls confirmed the kept pages');

    // Past the window of the reads, in steps the polls confirm: every page from memory.
    await advanceConfirmed(600);
    await advanceConfirmed(600);
    expect(clock - started).toBeGreaterThan(1_000);
    const [hits, misses] = [await keptPages('hit'), await keptPages('miss')];
    const again = await readAllPages(cursors);
    expect(again.map((page) => page.name)).toEqual(A.locations.map((location) => location.name));
    expect([await keptPages('hit'), await keptPages('miss')]).toEqual([hits + 30, misses]);
    // Never more than the window ahead.
    expect(new Set(again.map((page) => page.maxAge))).toEqual(new Set(['private, max-age=1']));

    // Subscribers too: still one poller, counted as both.
    const pollsBefore = await livePolls(subgraph.server);
    const live = liveClient(subgraph.server.url, as(A));
    try {
      collect(live, 'subscription { locationChanges { kind } }');
      await subscribedAndPolled(subgraph.server, pollsBefore);
      expect([hub.pollers, hub.reasonFor(A.tenantId, 'locations')]).toEqual([1, 'both']);
      expect(await metric('wfs_live_pollers', { reason: 'both' })).toBe(1);
    } finally {
      await live.dispose();
    }
    await waitFor(() => hub.reasonFor(A.tenantId, 'locations') === 'watched', 'watched alone once the subscriber left');

    // An upstream edit: the next poll drops what was kept, and the next read shows it.
    const target = A.locations[4]!;
    const old = target.name;
    const drops = await metric('wfs_cache_drops_total', { cause: 'changed' });
    target.name = `${old} (edited)`;
    try {
      await waitFor(async () => (await metric('wfs_cache_drops_total', { cause: 'changed' })) > drops, 'the poll saw the edit');
      const page = await subgraph.query(PAGE, { after: cursors[4] }, as(A));
      expect(page.data.locations.nodes[0].name).toBe(target.name);
    } finally {
      target.name = old;
    }

    // Reads stop: within two periods without them, the watching ends and so does the poller.
    clock += 5_000;
    await waitFor(() => hub.pollers === 0, 'the watching stopped once reads stopped');
    expect(await metric('wfs_cache_watching_total', { decision: 'stopped' })).toBe(1);
  });

  it('is never watched for sparse reads (pages each read once in bursts, period after period; a page once per 30 s): as many upstream calls as with the window at 0', async () => {
    // The default interval (15 s) and a 5 s window: a walk costs one call a period of 15 s.
    await start({ WFS_FRESHNESS_SECONDS: '5' });
    // As the bench's sparse load: the list paged through in pages of 1, then 2, then 3, a
    // burst a window, each page read once: one upstream call a query, as at window 0.
    const SIZED = 'query ($first: Int!, $after: String) { locations(first: $first, after: $after) { nodes { id } pageInfo { endCursor hasNextPage } } }';
    const readSized = (first: number, after: string | null) => subgraph!.query(SIZED, { first, after }, as(A));
    let queries = 0;
    for (let size = 1; size <= 3; size++) {
      let after: string | null = null;
      for (let more = true; more; queries++) {
        const page = await readSized(size, after);
        expect(page.errors).toBeUndefined();
        ({ endCursor: after, hasNextPage: more } = page.data.locations.pageInfo);
      }
      expect(calls('locations')).toBe(queries);
      clock += 5_000;
    }
    expect(queries).toBeGreaterThan(50);
    for (let read = 1; read <= 6; read++) {
      expect((await subgraph!.query(LOCATIONS, {}, as(A))).errors).toBeUndefined();
      expect(calls('locations')).toBe(queries + read);
      clock += 30_000;
    }
    expect(subgraph!.server.live.pollers).toBe(0);
    expect(await metric('wfs_cache_watching_total', { decision: 'started' })).toBe(0);
  });
});

describe('the freshness probe (npm run probe:freshness) measuring', () => {
  it('files each answer under the edit it may show: the first that shows it, stale answers asked after it, flaps', () => {
    const edit = pendingEdit(100);
    const [old, edited] = [1, 2];
    observe(edit, edited, { sentAt: 80, receivedAt: 95, value: edited }); // before the edit: says nothing of it
    observe(edit, edited, { sentAt: 90, receivedAt: 110, value: old }); // asked before the edit: not stale
    expect(edit).toEqual({ editedAt: 100, shownMs: null, answeredMs: null, staleMs: 0, flaps: 0 });
    observe(edit, edited, { sentAt: 105, receivedAt: 120, value: old });
    observe(edit, edited, { sentAt: 115, receivedAt: 130, value: edited });
    // Sent earlier, answered later: the edit showed from its sending on.
    observe(edit, edited, { sentAt: 110, receivedAt: 135, value: edited });
    expect(edit).toEqual({ editedAt: 100, shownMs: 10, answeredMs: 30, staleMs: 20, flaps: 0 });
    observe(edit, edited, { sentAt: 131, receivedAt: 140, value: old });
    expect(edit).toEqual({ editedAt: 100, shownMs: 10, answeredMs: 30, staleMs: 40, flaps: 1 });
    // Asked before the edit and showing it: visible at once.
    const early = pendingEdit(100);
    observe(early, edited, { sentAt: 95, receivedAt: 105, value: edited });
    expect(early).toMatchObject({ shownMs: 0, answeredMs: 5 });

    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(summarize(hundred)).toEqual({ count: 100, p50: 50, p90: 90, p99: 99, max: 100 });
    expect(summarize([7])).toEqual({ count: 1, p50: 7, p90: 7, p99: 7, max: 7 });
  });

  it('sees every edit through a subgraph with a window of 1 s, and never an older answer after a newer', async () => {
    subgraph = await startTestSubgraph({ tenants: [A, B] }, { WFS_FRESHNESS_SECONDS: '1' });
    const shift = A.shifts[0]!;
    const end = shift.end;
    try {
      const [result] = await measureFreshness({ tenants: [A], targets: [{ name: 'subgraph', url: subgraph.server.url }], edits: 3, cycleMs: 1_000, queryIntervalMs: 25, timeoutMs: 20_000 });
      expect(result).toMatchObject({ target: 'subgraph', edits: 3, unshown: 0, flaps: 0, errors: 0, shownMs: { count: 3 }, staleMs: { count: 3 } });
      expect(result!.answeredMaxMs).toBeGreaterThan(0);
      expect(result!.queries).toBeGreaterThan(3);
      expect(Date.parse(shift.end)).toBe(Date.parse(end) + 3 * 60_000);
    } finally {
      shift.end = end;
    }
  });
});
