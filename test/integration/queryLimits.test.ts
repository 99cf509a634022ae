import { connect } from 'node:net';
import type { Counter } from 'prom-client';
import { Kind, getIntrospectionQuery, print } from 'graphql';
import { request } from 'undici';
import { makeTenant } from '../../tools/emulator';
import { DEFAULT_QUERY_LIMITS } from '../../src/graphql/admission/limits';
import { sleep } from '../helpers/fixtures';
import { nestedBomb } from '../helpers/nestedBomb';
import { shippedOperations } from '../helpers/shippedOperations';
import { collect, liveClient } from '../helpers/liveClient';
import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * docs/limits.md, "Query limits": every limit counts every field, introspection included; only a
 * real `__schema`/`__type` field has its own (looser) depth bound, never a fragment
 * by its name. A refused document is HTTP 400 GRAPHQL_VALIDATION_FAILED and costs
 * the upstream nothing.
 */
const A = makeTenant({ tenantId: 'aaaaaaaa-0000-4000-8000-00000000000a', clientId: 'client-a', clientSecret: 'secret-a-limits-1', grantedScopes: ['shifts.read'], shard: 0, locationCount: 5, shiftCount: 5 });
/** Another company, for the cost-limit tests. */
const B = makeTenant({ tenantId: 'bbbbbbbb-0000-4000-8000-00000000000b', clientId: 'client-b', clientSecret: 'secret-b-limits-2', grantedScopes: ['shifts.read'], shard: 1, locationCount: 3, shiftCount: 4 });
const as = { 'x-tenant-id': A.tenantId };
const LIST = 'locations(first: 1) { nodes { id } }';

let subgraph: TestSubgraph;
beforeAll(async () => {
  // Slow bodies paced by the tests below are never dropped by the body deadline mid-test.
  subgraph = await startTestSubgraph({ tenants: [A, B] }, {}, { limits: { request: { bodyTimeoutMs: 60_000 } } });
});
afterAll(async () => {
  await subgraph.close();
});
beforeEach(() => subgraph.emulator.resetCounters());

const upstreamCalls = () => subgraph.emulator.counters.tokenRequests + subgraph.emulator.counters.listRequests.locations + subgraph.emulator.counters.listRequests.shifts;
const repeat = (count: number, item: (i: number) => string) => Array.from({ length: count }, (_, i) => item(i)).join(' ');
const nested = (levels: number, field: string, leaf: string) => `${`${field} { `.repeat(levels)}${leaf}${' }'.repeat(levels)}`;

/** Each abusive query of the issue, and the limit that must refuse it. */
const abusive: Array<[string, string, RegExp]> = [
  ['1,000 aliases of __typename beside a list', `{ ${repeat(1000, (i) => `t${i}: __typename`)} ${LIST} }`, /1000 aliases/],
  ['a 50-level __type { ofType … } chain beside a list', `{ __type(name: "Location") { ${nested(50, 'ofType', 'name')} } ${LIST} }`, /nests introspection 52 fields deep/],
  [
    'a fragment named __schema holding a deep selection',
    `{ ...__schema } fragment __schema on Query { ${LIST} __type(name: "Shift") { ${nested(25, 'ofType', 'name')} } }`,
    /nests introspection 27 fields deep/,
  ],
  ['1,000 aliases of a list', `{ ${repeat(1000, (i) => `l${i}: ${LIST}`)} }`, /more tha[nt] 5000 tokens/],
  ['1,000 directives with arguments', `{ locations(first: 1) ${repeat(1000, () => '@include(if: true)')} { nodes { id } } }`, /more tha[nt] 5000 tokens/],
  ['1,000 bare directives', `{ locations(first: 1) ${repeat(1000, () => '@cached')} { nodes { id } } }`, /1000 directives/],
  ['6,000 tokens', `{ ${LIST} ${repeat(6_000, () => 'a')} }`, /more tha[nt] 5000 tokens/],
  ['one field repeated 1,000 times (graphql-js stops comparing them)', `{ ${repeat(1000, () => '__typename')} ${LIST} }`, /^Validation aborted: the document takes too much work to check .*; select each field once/],
  [
    'a fragment fan-out of 10^5 fields',
    `{ ...F5 } ${[1, 2, 3, 4, 5].map((n) => `fragment F${n} on Query { ${repeat(10, (i) => (n === 1 ? `a${i}: __typename` : `...F${n - 1}`))} }`).join(' ')}`,
    /selects 100000 fields/,
  ],
];

describe('query limits', () => {
  it.each(abusive)('refuses %s with HTTP 400 GRAPHQL_VALIDATION_FAILED and no upstream call', async (_name, query, why) => {
    const response = await subgraph.query(query, {}, as);
    expect(response.status).toBe(400);
    expect(response.data).toBeUndefined();
    expect(errorCodes(response).length).toBeGreaterThan(0);
    expect(new Set(errorCodes(response))).toEqual(new Set(['GRAPHQL_VALIDATION_FAILED']));
    expect(response.errors?.map((error) => error.message).join('\n')).toMatch(why);
    expect(upstreamCalls()).toBe(0);
  });

  it("passes the introspection query GraphiQL sends (graphql-js's full one)", async () => {
    const response = await subgraph.query(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true, oneOf: true }));
    expect(response.status).toBe(200);
    expect(response.errors).toBeUndefined();
    expect(response.data?.__schema?.types?.length).toBeGreaterThan(10);
  });

  it("passes GraphQL Code Generator's introspection query", async () => {
    // @graphql-tools/url-loader (what codegen uses for a URL schema) sends graphql-js's query with these options.
    const response = await subgraph.query(getIntrospectionQuery({ descriptions: true, specifiedByUrl: false, directiveIsRepeatable: true, schemaDescription: false, inputValueDeprecation: true }));
    expect(response.status).toBe(200);
    expect(response.errors).toBeUndefined();
  });

  it('still serves the deepest data query of the schema and 30 aliases', async () => {
    const deep = '{ shifts(first: 1) { edges { node { location { name } } } } }';
    const response = await subgraph.query(deep, {}, as);
    expect(response.status).toBe(200);
    expect(response.errors).toBeUndefined();
    const aliases = await subgraph.query(`{ ${repeat(30, (i) => `t${i}: __typename`)} }`, {}, as);
    expect(aliases.status).toBe(200);
    expect(aliases.errors).toBeUndefined();
  });
});

/**
 * The cost limit (docs/limits.md, "Query limits"): a document whose answer multiplies through nested connections is refused
 * before any upstream call, whatever its aliases, fragments or variables; every
 * document we ship is served.
 */
describe('query limits, a query and a subscription alike', () => {
  // One document check (src/graphql/admission/document.ts) for both transports: the
  // same document over the limits, POSTed as a query and sent as a graphql-ws subscribe,
  // is refused with the same messages and codes.
  it.each(abusive)('words %s the same over HTTP and over graphql-ws', async (_name, query) => {
    const counted = (metric: string, reason: string) => counterTotal(subgraph.server.metrics.registry.getSingleMetric(metric) as Counter<string>, { reason });
    const before = { query: await counted('wfs_graphql_requests_refused_total', 'query_document'), subscription: await counted('wfs_live_subscriptions_refused_total', 'document') };
    const posted = await subgraph.query(query, {}, as);
    const client = liveClient(subgraph.server.url, as);
    try {
      const received = collect(client, query);
      await waitFor(() => received.completed || received.error !== undefined, 'the subscribe answered');
      expect(received.error).toBeUndefined();
      const alike = (errors: ReadonlyArray<{ message: string; extensions?: { code?: unknown } }> | undefined) => (errors ?? []).map((error) => ({ message: error.message, code: error.extensions?.code }));
      expect(received.results).toHaveLength(1);
      expect(alike(posted.errors).length).toBeGreaterThan(0);
      expect(alike(received.results[0]!.errors)).toEqual(alike(posted.errors));
      // Each counted once, through the one refusal event, on its transport's counter.
      expect(await counted('wfs_graphql_requests_refused_total', 'query_document')).toBe(before.query + 1);
      expect(await counted('wfs_live_subscriptions_refused_total', 'document')).toBe(before.subscription + 1);
    } finally {
      await client.dispose();
    }
  });
});

describe('cost limit', () => {
  const throughFragments = `query Bomb { l: locations { ...L } }
    fragment L on LocationConnection { nodes { id s: shifts { ...S } } }
    fragment S on ShiftConnection { nodes { id location { t: shifts { nodes { location { u: shifts { nodes { id start } } } } } } } }`;
  const fromVariables = 'query Pages($n: Int) { locations(first: $n) { nodes { shifts(first: $n) { nodes { location { shifts(first: $n) { nodes { id } } } } } } } }';

  const refusals: Array<[string, string, Record<string, unknown>]> = [
    ['the nested bomb of the issue', nestedBomb(), {}],
    ['the same bomb with other aliases', nestedBomb((i) => `alias_${i}_x`), {}],
    ['the same nesting spread through fragments', throughFragments, {}],
    ['page sizes given as variables', fromVariables, { n: 100 }],
  ];

  it.each(refusals)('refuses %s: HTTP 400 GRAPHQL_VALIDATION_FAILED with the estimate and the budget, no upstream call', async (_name, query, variables) => {
    const response = await subgraph.query(query, variables, as);
    expect(response.status).toBe(400);
    expect(response.data).toBeUndefined();
    expect(errorCodes(response)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    const extensions = response.errors?.[0]?.extensions ?? {};
    expect(extensions['cost.max']).toBe(DEFAULT_QUERY_LIMITS.maxCost);
    expect(extensions['cost.estimated']).toBeGreaterThan(DEFAULT_QUERY_LIMITS.maxCost);
    expect(response.errors?.[0]?.message).toMatch(/^operation \w+ is estimated at \d+ \(the size of the answer it can produce\); at most 50000 are allowed$/);
    expect(upstreamCalls()).toBe(0);
  });

  it('serves the same variables-sized document with small pages', async () => {
    const response = await subgraph.query(fromVariables, { n: 2 }, as);
    expect(response.status).toBe(200);
    expect(response.errors).toBeUndefined();
    expect(response.data?.locations?.nodes).toHaveLength(2);
  });

  it('serves every operation we ship (operations/, the README, the examples) at its largest page size', async () => {
    // A required cursor (README's `Earlier` pages back from one): a real shifts cursor.
    const cursor = (await subgraph.query('{ shifts(first: 2) { edges { cursor } } }', {}, as)).data?.shifts?.edges[1]?.cursor as string;
    for (const operation of shippedOperations()) {
      const required = (operation.operation.variableDefinitions ?? []).filter((definition) => definition.type.kind === Kind.NON_NULL_TYPE && !(definition.variable.name.value in operation.variables));
      const variables = { ...operation.variables, ...Object.fromEntries(required.map((definition) => [definition.variable.name.value, cursor])) };
      const response = await subgraph.query(print(operation.document), variables, as);
      expect({ operation: operation.name, source: operation.source, status: response.status, codes: errorCodes(response) }).toEqual({
        operation: operation.name,
        source: operation.source,
        status: 200,
        codes: expect.not.arrayContaining(['GRAPHQL_VALIDATION_FAILED']),
      });
    }
  });

  it("answers another company's query while bombs arrive", async () => {
    const [other, ...bombs] = await Promise.all([
      subgraph.query('{ locations(first: 3) { nodes { id } } }', {}, { 'x-tenant-id': B.tenantId }),
      ...Array.from({ length: 10 }, () => subgraph.query(nestedBomb(), {}, as)),
    ]);
    expect(bombs.map((bomb) => bomb.status)).toEqual(Array(10).fill(400));
    expect(other?.errors).toBeUndefined();
    expect(other?.data?.locations?.nodes).toHaveLength(3);
  });

  it('takes its budget from WFS_MAX_COST', async () => {
    const strict = await startTestSubgraph({}, { WFS_MAX_COST: '300' }, {}, subgraph.emulator);
    try {
      // LocationPicker (operations/) is estimated at 504 (docs/limits.md, "Query limits").
      const picker = shippedOperations().find((op) => op.source === 'operations/LocationPicker.graphql')!;
      const response = await strict.query(print(picker.document), picker.variables, as);
      expect(response.status).toBe(400);
      expect(response.errors?.[0]?.extensions).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED', 'cost.estimated': 504, 'cost.max': 300 });
      expect(upstreamCalls()).toBe(0);
    } finally {
      await strict.close();
    }
  });
});

/**
 * The HTTP side of a document: a body over 1 MiB is answered 413 BAD_REQUEST without
 * being read to its end, and the connection closes; an answer that fits carries its
 * length (one write, not chunked framing).
 */
describe('request bodies', () => {
  it('refuses a body over 1 MiB with HTTP 413 BAD_REQUEST, closes the connection, and serves the next request', async () => {
    const body = JSON.stringify({ query: `{ ${LIST} }`, padding: 'x'.repeat(2 * 1024 * 1024) });
    const response = await request(subgraph.server.url, { method: 'POST', headers: { 'content-type': 'application/json', ...as }, body }).catch((error: Error) => error);
    // The server answers before it has read the whole body; the client may see the answer or a reset while still sending.
    if (!(response instanceof Error)) {
      expect(response.statusCode).toBe(413);
      expect(response.headers.connection).toBe('close');
      const answer = (await response.body.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
      expect(answer.errors[0]!.extensions.code).toBe('BAD_REQUEST');
      expect(answer.errors[0]!.message).toMatch(/larger than 1048576 bytes/);
    } else {
      expect((response as NodeJS.ErrnoException).code).toMatch(/ECONNRESET|EPIPE|UND_ERR_SOCKET/);
    }
    expect(upstreamCalls()).toBe(0);
    const next = await subgraph.query(`{ ${LIST} }`, {}, as);
    expect(next.status).toBe(200);
    expect(next.data?.locations.nodes).toHaveLength(1);
  });

  it('counts a client that leaves in the middle of its body as aborted, and lets the request go', async () => {
    const metrics = subgraph.server.metrics;
    const abortedNow = async () => (await metrics.graphqlAborted.get()).values.find((value) => value.labels.operation_type === 'unknown')?.value ?? 0;
    const before = await abortedNow();
    const { port } = subgraph.server;
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-tenant-id: ${A.tenantId}\r\ncontent-length: 1000\r\n\r\n{"query":`);
    // The request is in flight once the server has its headers and is reading the body.
    const inFlight = async () => (await metrics.graphqlInFlight.get()).values[0]?.value ?? 0;
    await waitFor(async () => (await inFlight()) === 1, 'the request being read');
    socket.destroy();
    await waitFor(async () => (await abortedNow()) > before, 'the abort counted');
    expect(await abortedNow()).toBe(before + 1);
    expect((await metrics.graphqlInFlight.get()).values[0]!.value).toBe(0);
    expect(upstreamCalls()).toBe(0);
  });

  it('refuses bodies past the bound (16 MiB here) being read at once with 503 SERVICE_UNAVAILABLE and Retry-After, reads the rest, and gives every byte back', async () => {
    // Half the shipped 64 MiB: a body of 1 MB of string counts about 2 MB as parsed
    // (memory/jsonSize.ts), so 16 fit. test/e2e/slowBodies.test.ts meets the shipped bound itself.
    const BOUND = 32 * 1024 * 1024;
    const bounded = await startTestSubgraph({}, {}, { limits: { request: { bodyTimeoutMs: 60_000, bufferedBodyBytes: BOUND } } }, subgraph.emulator);
    try {
      await bodiesPastTheBound(bounded.server);
    } finally {
      await bounded.close();
    }
  });

  async function bodiesPastTheBound(server: TestSubgraph['server']): Promise<void> {
    const { port } = server;
    const BODY = 1_000_000;
    const STEP = 200_000;
    const prefix = JSON.stringify({ query: '{ __typename }', padding: '' }).slice(0, -2);
    const body = Buffer.from(`${prefix}${'x'.repeat(BODY - prefix.length - 2)}"}`);
    expect(body.length).toBe(BODY);
    const bodyBytes = async () => (await server.metrics.requestBodyBytes.get()).values[0]?.value ?? 0;
    const refused = async () => (await server.metrics.requestsRefused.get()).values.find((value) => value.labels['reason'] === 'body_bytes')?.value ?? 0;
    /**
     * `count` clients each send one 1 MB body in five steps, all in step; their raw
     * answers. With `untilRefused`, the last step waits until the server has refused a
     * body: the bodies are then surely read side by side, however slowly a loaded machine
     * reads them (completed bodies give their bytes back as their answers go out).
     */
    const slowClients = async (count: number, untilRefused = false): Promise<string[]> => {
      // From ten loopback addresses: each holds at most three bodies, 6 MB as parsed, under its share (a quarter of the bound, 8 MiB), so the replica's bound is what they meet.
      const clients = Array.from({ length: count }, (_, i) => {
        const socket = connect({ port, host: '127.0.0.1', localAddress: `127.0.0.${10 + (i % 10)}` });
        const client = { socket, answer: '', closed: Promise.resolve('') };
        client.closed = new Promise<string>((resolve) => {
          socket.on('data', (data) => (client.answer += data.toString('latin1')));
          socket.on('close', () => resolve(client.answer));
          socket.on('error', () => undefined);
        });
        socket.write(`POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-tenant-id: ${A.tenantId}\r\ncontent-length: ${BODY}\r\nconnection: close\r\n\r\n`);
        return client;
      });
      for (let at = 0; at < BODY; at += STEP) {
        if (untilRefused && at + STEP >= BODY) await waitFor(async () => (await refused()) > refusedBefore, 'a body refused');
        for (const { socket } of clients) if (!socket.destroyed) socket.write(body.subarray(at, at + STEP));
        // Time is the subject: slow clients pace their bytes, so the bodies are read side by side.
        await sleep(100);
      }
      return Promise.all(clients.map(({ closed }) => closed));
    };
    const status = (answer: string) => answer.slice(0, 12);

    // 25 bodies: after four steps 25 × 1.6 MB = 40 MB would be held as parsed, past the bound's 33.5 MB.
    const refusedBefore = await refused();
    const answers = await slowClients(25, true);
    const busy = answers.filter((answer) => status(answer) === 'HTTP/1.1 503');
    const served = answers.filter((answer) => status(answer) === 'HTTP/1.1 200');
    const statuses: Record<string, number> = {};
    for (const answer of answers) statuses[status(answer) || '(none)'] = (statuses[status(answer) || '(none)'] ?? 0) + 1;
    expect({ statuses, busy: busy.length > 0, served: served.length > 0 }).toEqual({ statuses, busy: true, served: true });
    // Each client gets its answer, none a connection reset: a refused body is read to its end and dropped first.
    expect(busy.length + served.length).toBe(25);
    expect(busy[0]).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(busy[0]).toContain('"code":"SERVICE_UNAVAILABLE"');
    expect(served[0]).toContain('{"data":{"__typename":"Query"}}');

    // Every refused or finished body gave its bytes back: 15 bodies, 30 MB as parsed, at once
    // fit again (in the 33.5 MB bound, a leak of 3.5 MB would refuse one).
    const again = await slowClients(15);
    expect(again.map(status)).toEqual(Array(15).fill('HTTP/1.1 200'));
    expect(await bodyBytes()).toBe(0);
    expect(upstreamCalls()).toBe(0);
  }

  it('answers with a Content-Length, not chunked', async () => {
    const response = await request(subgraph.server.url, { method: 'POST', headers: { 'content-type': 'application/json', ...as }, body: JSON.stringify({ query: `{ ${LIST} }` }) });
    const text = await response.body.text();
    expect(response.statusCode).toBe(200);
    expect(response.headers['transfer-encoding']).toBeUndefined();
    expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text).data.locations.nodes).toHaveLength(1);
  });
});
