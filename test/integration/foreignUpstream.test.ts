import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { parsePageReference } from '../../src/upstream/pageReference';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import {
  LIST_PATHS,
  locationId,
  makeLocations,
  makeShifts,
  shiftId,
  startForeignUpstream,
  type FaultContext,
  type ForeignTenant,
  type ForeignTenantSpec,
  type ForeignUpstream,
  type ListName,
  type RefFormat,
  type SizePolicy,
} from '../helpers/foreignUpstream';
import type { Counter } from 'prom-client';
import { collect, liveClient } from '../helpers/liveClient';
import { foreignUpstreamEnv } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * The subgraph against an upstream that is NOT our emulator (test/helpers/foreignUpstream.ts):
 * a token endpoint under a path prefix, HS256 JWTs with extra claims, page references
 * in formats the emulator never uses, page-size policies, foreign record shapes and
 * hostile responses. Everything runs over real HTTP on loopback, through the same
 * environment variables a deployment uses (docs/configuration.md, "Settings").
 *
 * Every scenario is its own tenant of one fake upstream and one subgraph, so token
 * cool-downs and caches of one case never leak into another.
 */

type GqlError = { message: string; path?: Array<string | number>; extensions?: { code?: string; [key: string]: unknown } };
type GqlResponse = { status: number; data?: any; errors?: GqlError[] };

const LOCATIONS = makeLocations(30);
const SHIFTS = makeShifts(61, LOCATIONS);
const SHIFT_IDS = SHIFTS.map(shiftId);
const LOCATION_IDS = LOCATIONS.map(locationId);

/** The router's timeout for this subgraph (router/router.yaml, docs/supergraph.md): an answer must come before it. */
const ROUTER_SUBGRAPH_TIMEOUT_MS = 20_000;

let up: ForeignUpstream;
let server: RunningServer;
const logs: string[] = [];

// Knobs the hostile tenants read at request time.
let hostileNext: (origin: string, evil: string) => unknown = () => null;

const WALKS: Array<{ format: RefFormat; size: SizePolicy }> = [
  { format: 'page', size: { kind: 'honour', default: 20 } },
  { format: 'page', size: { kind: 'cap', size: 25 } },
  { format: 'page-absolute', size: { kind: 'fixed', size: 50 } },
  { format: 'page-nosize', size: { kind: 'cap', size: 25 } },
  { format: 'keyset', size: { kind: 'cap', size: 25 } },
  { format: 'offset-noslash', size: { kind: 'fixed', size: 50 } },
  { format: 'opaque', size: { kind: 'cap', size: 25 } },
];
const walkName = (w: { format: RefFormat; size: SizePolicy }) => `walk-${w.format}-${w.size.kind}`;

/** Broken items sit mid-page, at the last place of page 1 and the first of page 2 (pages of 25). */
const WITH_MALFORMED: unknown[] = [...SHIFTS.slice(0, 40)];
WITH_MALFORMED.splice(10, 0, { object: 'shift' });
WITH_MALFORMED.splice(24, 0, 'not-an-object');
WITH_MALFORMED.splice(25, 0, { object: 'timesheet', id: 'ts_1', minutes: 480 });
const WITH_MALFORMED_IDS = SHIFTS.slice(0, 40).map(shiftId);

const BATCH_LOCATIONS = makeLocations(60);
const BATCH_SHIFTS = makeShifts(100, BATCH_LOCATIONS);

function overrideFirstPage(mutate: (envelope: ReturnType<FaultContext['envelope']>, ctx: FaultContext) => void) {
  return (ctx: FaultContext): boolean => {
    const envelope = ctx.envelope();
    mutate(envelope, ctx);
    ctx.res.writeHead(200, { 'content-type': 'application/json' });
    ctx.res.end(JSON.stringify(envelope));
    return true;
  };
}

const TENANTS: ForeignTenantSpec[] = [
  ...WALKS.map((w) => ({ name: walkName(w), format: w.format, size: w.size, locations: LOCATIONS, shifts: SHIFTS })),
  { name: 'walk-malformed', format: 'page', size: { kind: 'cap', size: 25 }, locations: LOCATIONS, shifts: WITH_MALFORMED },
  { name: 'walk-opaque-slash', format: 'opaque-slash', size: { kind: 'cap', size: 25 }, locations: LOCATIONS, shifts: SHIFTS },
  { name: 'walk-long-opaque', format: 'opaque-long', size: { kind: 'cap', size: 10 }, locations: LOCATIONS, shifts: SHIFTS.slice(0, 35) },
  { name: 'records', format: 'keyset', locations: LOCATIONS, shifts: SHIFTS.slice(0, 15) },
  { name: 'records-malformed', format: 'page', locations: LOCATIONS, shifts: WITH_MALFORMED.slice(0, 30) },
  {
    name: 'bad-dates',
    format: 'page',
    locations: LOCATIONS,
    shifts: [
      { object: 'shift', id: 'd_ok', start: '2026-11-23T09:00:00Z', end: '2026-11-23T17:00:00.250+01:00', location: null, user: null },
      { object: 'shift', id: 'd_basic_offset', start: '2026-11-23T09:00:00+0100', end: '2026-11-23T17:00:00+0100', location: null, user: null },
      { object: 'shift', id: 'd_garbage', start: 'tomorrow morning', end: '2026-13-45T99:00:00Z', location: null, user: null },
    ],
  },
  { name: 'batched', format: 'page', size: { kind: 'cap', size: 25 }, locations: BATCH_LOCATIONS, shifts: BATCH_SHIFTS },
  { name: 'entities', format: 'opaque', size: { kind: 'cap', size: 25 }, locations: BATCH_LOCATIONS, shifts: BATCH_SHIFTS },
  { name: 'omit-scope', omitScope: true, locations: LOCATIONS, shifts: SHIFTS.slice(0, 3) },
  { name: 'no-shifts-scope', scope: 'locations.read', locations: LOCATIONS, shifts: SHIFTS.slice(0, 3) },
  { name: 'scope-narrowed', scope: 'shifts.read timesheets.read', granted: 'timesheets.read', locations: LOCATIONS, shifts: SHIFTS.slice(0, 3) },
  { name: 'upstream-403', locations: LOCATIONS, shifts: SHIFTS.slice(0, 3), fault: ({ res, list }) => list === 'shifts' && (res.writeHead(403).end('{"error":"insufficient_scope"}'), true) },
  { name: 'api-base-slash', claims: (shard) => ({ api_base: `${shard}/` }), locations: LOCATIONS.slice(0, 2) },
  {
    name: 'hostile-next',
    format: 'page',
    size: { kind: 'cap', size: 5 },
    locations: LOCATIONS,
    shifts: SHIFTS,
    fault: overrideFirstPage((envelope) => {
      envelope.next = hostileNext(up.shardOrigin, up.evilOrigin) as string | null;
    }),
  },
  {
    name: 'redirect',
    locations: LOCATIONS,
    shifts: SHIFTS,
    fault: ({ res, list }) => {
      res.writeHead(302, { location: `${up.evilOrigin}${LIST_PATHS[list]}?page_size=100` }).end();
      return true;
    },
  },
  {
    name: 'loop-to-first',
    format: 'page',
    size: { kind: 'cap', size: 25 },
    shifts: SHIFTS,
    // Page 1 names itself, spelled the way page 2 would be: `?page=1&page_size=25`.
    fault: overrideFirstPage((envelope, { url }) => {
      if (!url.searchParams.has('page') || url.searchParams.get('page') === '1') envelope.next = `${LIST_PATHS.shifts}?page=1&page_size=25`;
    }),
  },
  {
    name: 'loop-bare-path',
    format: 'page',
    size: { kind: 'cap', size: 25 },
    shifts: SHIFTS,
    fault: overrideFirstPage((envelope) => {
      if (envelope.has_more) envelope.next = LIST_PATHS.shifts;
    }),
  },
  {
    name: 'rl-date-then-ok',
    locations: LOCATIONS,
    fault: ({ res, attempt }) => {
      if (attempt > 1) return false;
      res.writeHead(429, { 'retry-after': new Date(Date.now() + 1000).toUTCString() }).end();
      return true;
    },
  },
  {
    name: 'rl-always-past-date',
    locations: LOCATIONS,
    fault: ({ res }) => (res.writeHead(429, { 'retry-after': new Date(Date.now() - 60_000).toUTCString() }).end(), true),
  },
  {
    name: 'rl-always-hour',
    locations: LOCATIONS,
    fault: ({ res }) => (res.writeHead(429, { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() }).end(), true),
  },
  { name: 'err500-then-ok', locations: LOCATIONS, fault: ({ res, attempt }) => attempt === 1 && (res.writeHead(500).end('oops'), true) },
  { name: 'err503-always', locations: LOCATIONS, fault: ({ res }) => (res.writeHead(503).end(), true) },
  { name: 'not-json', locations: LOCATIONS, fault: ({ res }) => (res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>'), true) },
  { name: 'not-envelope', locations: LOCATIONS, fault: ({ res }) => (res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(LOCATIONS)), true) },
  {
    name: 'huge-body',
    locations: LOCATIONS,
    fault: ({ res }) => {
      // > 8 MiB, chunked (no content-length to trust), valid JSON if read to the end.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"object":"list","has_more":false,"next":null,"previous":null,"data":[');
      const item = JSON.stringify({ object: 'location', id: 'loc_x', name: 'x'.repeat(1000) });
      const chunk = Array.from({ length: 1000 }, () => item).join(',');
      for (let i = 0; i < 9; i += 1) res.write(`${i ? ',' : ''}${chunk}`);
      res.end(']}');
      return true;
    },
  },
  { name: 'always-401', locations: LOCATIONS, alwaysUnauthorized: true },
  { name: 'other-tenant', claims: () => ({ tenant_id: 'f0e1d2c3-0000-4000-8000-999999999999' }), locations: LOCATIONS },
  { name: 'api-base-path', claims: (shard) => ({ api_base: `${shard}/shard-3` }), locations: LOCATIONS },
  { name: 'api-base-userinfo', claims: (shard) => ({ api_base: shard.replace('http://', 'http://svc:pw@') }), locations: LOCATIONS },
  { name: 'hang-headers', locations: LOCATIONS, fault: () => true },
  {
    name: 'hang-body',
    locations: LOCATIONS,
    fault: ({ res }) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"object":"list","data":[');
      return true;
    },
  },
  { name: 'hang-token', locations: LOCATIONS, tokenFault: () => true },
  {
    // Every page answers, each in 4.2 s (well inside every per-call timeout); 100 shifts in pages of 20.
    // Time is the subject: a slow upstream, its answers delayed on purpose.
    name: 'slow-pages',
    format: 'page',
    size: { kind: 'cap', size: 20 },
    shifts: BATCH_SHIFTS,
    fault: ({ res, envelope }) => {
      const timer = setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(envelope()));
      }, 4_200);
      res.on('close', () => clearTimeout(timer));
      return true;
    },
  },
];

function tenant(name: string): ForeignTenant {
  return up.tenant(name);
}

async function gql(name: string, query: string, variables?: Record<string, unknown>): Promise<GqlResponse> {
  // A time limit disarmed with the request: no timer outlives the test.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 45_000);
  try {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tenant-id': tenant(name).tenantId },
      body: JSON.stringify({ query, variables }),
      signal: controller.signal,
    });
    return { status: response.status, ...((await response.json()) as Omit<GqlResponse, 'status'>) };
  } finally {
    clearTimeout(timer);
  }
}

const codes = (response: GqlResponse) => (response.errors ?? []).map((error) => error.extensions?.code);
const listCalls = (name: string, list: ListName) => tenant(name).calls.filter((call) => call.list === list);

/** A query started before the other tests, awaited at the end: hangs cost no suite time. */
interface Timed {
  elapsedMs: number;
  response?: GqlResponse;
  failure?: string;
}
function timed(name: string, query: string): Promise<Timed> {
  const started = performance.now();
  return gql(name, query).then(
    (response) => ({ elapsedMs: Math.round(performance.now() - started), response }),
    (error: unknown) => ({ elapsedMs: Math.round(performance.now() - started), failure: String(error) }),
  );
}
let hangs: Record<'headers' | 'body' | 'token' | 'slow', Promise<Timed>>;

beforeAll(async () => {
  up = await startForeignUpstream();
  for (const spec of TENANTS) up.add(spec);
  const config = loadConfig(foreignUpstreamEnv(up, { WFS_CURSOR_SECRET: 'foreign-upstream-cursor-secret-0123456789', LOG_LEVEL: 'debug' }));
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  server = await startServer(config, { logger: createLogger('debug', sink) });
  const q = '{ locations(first: 5) { nodes { id } } }';
  hangs = {
    headers: timed('hang-headers', q),
    body: timed('hang-body', q),
    token: timed('hang-token', q),
    slow: timed('slow-pages', '{ shifts(first: 100) { nodes { id } } }'),
  };
});

afterAll(async () => {
  // The fake upstream first: that ends any hanging upstream call, so the subgraph drains at once.
  await up?.close();
  await server?.close();
});

// ---------------------------------------------------------------------------------------------

const WALK_QUERY = (list: ListName) => `query Walk($first: Int, $after: String) {
  ${list}(first: $first, after: $after) { edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }
}`;
const BACK_QUERY = (list: ListName) => `query Back($last: Int, $before: String) {
  ${list}(last: $last, before: $before) { edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }
}`;

interface Walked {
  ids: string[];
  cursors: string[];
  codes: Array<string | undefined>;
}

async function walkForward(name: string, list: ListName, first: number): Promise<Walked> {
  const walked: Walked = { ids: [], cursors: [], codes: [] };
  let after: string | null = null;
  for (let guard = 0; guard < 200; guard += 1) {
    const response = await gql(name, WALK_QUERY(list), { first, after });
    walked.codes.push(...codes(response));
    const connection = response.data?.[list];
    if (!connection) throw new Error(`walk of ${name} broke after ${walked.ids.length} ids: ${JSON.stringify(response.errors)}`);
    for (const edge of connection.edges) {
      walked.ids.push(edge.node.id);
      walked.cursors.push(edge.cursor);
    }
    if (!connection.pageInfo.hasNextPage) return walked;
    expect(connection.pageInfo.endCursor).toBe(connection.edges.at(-1)?.cursor);
    after = connection.pageInfo.endCursor;
  }
  throw new Error(`walk of ${name} did not end`);
}

async function walkBackward(name: string, list: ListName, last: number): Promise<Walked> {
  const walked: Walked = { ids: [], cursors: [], codes: [] };
  let before: string | null = null;
  for (let guard = 0; guard < 200; guard += 1) {
    const response = await gql(name, BACK_QUERY(list), { last, before });
    walked.codes.push(...codes(response));
    const connection = response.data?.[list];
    if (!connection) throw new Error(`backward walk of ${name} broke after ${walked.ids.length} ids: ${JSON.stringify(response.errors)}`);
    walked.ids.unshift(...connection.edges.map((edge: { node: { id: string } }) => edge.node.id));
    walked.cursors.unshift(...connection.edges.map((edge: { cursor: string }) => edge.cursor));
    if (!connection.pageInfo.hasPreviousPage) return walked;
    before = connection.pageInfo.startCursor;
  }
  throw new Error(`backward walk of ${name} did not end`);
}

/**
 * Resumes from every edge cursor, 25 per request (aliases): `first: 1, after: c[i]` must
 * give id i+1 and `last: 1, before: c[i]` id i-1. Returns the mismatches.
 */
async function resumeEveryCursor(name: string, list: ListName, walked: Walked): Promise<string[]> {
  const problems: string[] = [];
  for (let from = 0; from < walked.cursors.length; from += 12) {
    const indexes = walked.cursors.map((_, i) => i).slice(from, from + 12);
    const variables: Record<string, string> = {};
    const fields = indexes.flatMap((i) => {
      variables[`c${i}`] = walked.cursors[i]!;
      return [
        `f${i}: ${list}(first: 1, after: $c${i}) { nodes { id } }`,
        `b${i}: ${list}(last: 1, before: $c${i}) { nodes { id } }`,
      ];
    });
    const query = `query Resume(${indexes.map((i) => `$c${i}: String`).join(', ')}) { ${fields.join('\n')} }`;
    const response = await gql(name, query, variables);
    for (const error of response.errors ?? []) {
      if (error.extensions?.code !== 'UPSTREAM_BAD_RESPONSE' || error.path) problems.push(`${error.path?.join('.')}: ${error.extensions?.code} ${error.message}`);
    }
    for (const i of indexes) {
      const forward = response.data?.[`f${i}`]?.nodes?.map((n: { id: string }) => n.id);
      const backward = response.data?.[`b${i}`]?.nodes?.map((n: { id: string }) => n.id);
      const wantForward = i + 1 < walked.ids.length ? [walked.ids[i + 1]] : [];
      const wantBackward = i > 0 ? [walked.ids[i - 1]] : [];
      if (JSON.stringify(forward) !== JSON.stringify(wantForward)) problems.push(`after cursor #${i}: got ${JSON.stringify(forward)}, want ${JSON.stringify(wantForward)}`);
      if (JSON.stringify(backward) !== JSON.stringify(wantBackward)) problems.push(`before cursor #${i}: got ${JSON.stringify(backward)}, want ${JSON.stringify(wantBackward)}`);
    }
  }
  return problems;
}

describe('paging across page-reference formats and page-size policies the emulator never uses', () => {
  describe.each(WALKS.map((w) => [walkName(w), w] as const))('%s', (name) => {
    it('visits every shift exactly once, in order, with first/after', async () => {
      const walked = await walkForward(name, 'shifts', 7);
      expect(walked.codes).toEqual([]);
      expect(walked.ids).toEqual(SHIFT_IDS);
    });

    it('visits every shift exactly once, in order, backward with last/before', async () => {
      const walked = await walkBackward(name, 'shifts', 9);
      expect(walked.codes).toEqual([]);
      expect(walked.ids).toEqual(SHIFT_IDS);
    });

    it('resumes from every edge cursor, forward and backward', async () => {
      const walked = await walkForward(name, 'shifts', 11);
      expect(await resumeEveryCursor(name, 'shifts', walked)).toEqual([]);
    });

    it('walks locations too, sending page_size on every call, the bearer token only to the shard', async () => {
      const walked = await walkForward(name, 'locations', 4);
      expect(walked.ids).toEqual(LOCATION_IDS);
      for (const call of tenant(name).calls) {
        expect(new URL(call.url, up.shardOrigin).searchParams.get('page_size')).toMatch(/^\d+$/);
        expect(call.authorization).toMatch(/^Bearer ey/);
      }
    });
  });

  it('a malformed item mid-page, at the end of a page and at the start of the next is skipped with UPSTREAM_BAD_RESPONSE; every good id exactly once', async () => {
    const walked = await walkForward('walk-malformed', 'shifts', 6);
    expect(walked.ids).toEqual(WITH_MALFORMED_IDS);
    expect(new Set(walked.codes)).toEqual(new Set(['UPSTREAM_BAD_RESPONSE']));
    expect(await resumeEveryCursor('walk-malformed', 'shifts', walked)).toEqual([]);
  });

  it('bare opaque page tokens of ~1 600 characters (accepted up to 2 048): every edge cursor still resumes', async () => {
    // The upstream pages by 10 with long tokens; the walk asks for 10 at a time, so each
    // endCursor is the last record of an upstream page and carries two references.
    const walked = await walkForward('walk-long-opaque', 'shifts', 10).catch((error: Error) => ({ ids: [], cursors: [], codes: [error.message] }));
    expect(walked.codes).toEqual([]);
    expect(walked.ids).toEqual(SHIFT_IDS.slice(0, 35));
  });

  it('a bare opaque token that starts with "/" (1 in 64 standard-base64 tokens do) is followed as a token', async () => {
    const walked = await walkForward('walk-opaque-slash', 'shifts', 20).catch((error: Error) => ({ ids: [], cursors: [], codes: [error.message] }));
    expect(walked.codes).toEqual([]);
    expect(walked.ids).toEqual(SHIFT_IDS);
  });

  it('an absolute reference with the explicit default port is the api_base origin', () => {
    const path = '/api/public/v1/shifts/';
    expect(parsePageReference(`https://shard-3.example.com:443${path}?page=2&page_size=25`, 'https://shard-3.example.com', path)).toBe('page=2&page_size=25');
    expect(parsePageReference(`HTTPS://Shard-3.Example.com${path}?starting_after=shf_1`, 'https://shard-3.example.com', path)).toBe('starting_after=shf_1');
  });

  it('a cursor of one tenant is BAD_USER_INPUT for another, with no upstream call', async () => {
    const walked = await walkForward('walk-page-honour', 'shifts', 30);
    const before = tenant('walk-page-cap').calls.length;
    const response = await gql('walk-page-cap', WALK_QUERY('shifts'), { first: 5, after: walked.cursors[3] });
    expect(codes(response)).toEqual(['BAD_USER_INPUT']);
    expect(tenant('walk-page-cap').calls.length).toBe(before);
  });
});

describe('records of foreign shapes', () => {
  it('maps location objects, numeric ids, user null/id/object, Z/offset/fractional times, and ignores extra fields', async () => {
    const response = await gql('records', '{ shifts(first: 100) { nodes { id start end location { id name } user { id } } } }');
    expect(codes(response)).toEqual([]);
    const byId = new Map(LOCATIONS.map((l) => [locationId(l), (l as { name: string }).name]));
    const expected = SHIFTS.slice(0, 15).map((raw) => {
      const r = raw as { id: unknown; start: string; end: string; location: unknown; user: unknown };
      const lid = r.location === null ? null : typeof r.location === 'object' ? String((r.location as { id: unknown }).id) : String(r.location);
      const uid = r.user === null ? null : typeof r.user === 'object' ? String((r.user as { id: unknown }).id) : String(r.user);
      return { id: String(r.id), start: r.start, end: r.end, location: lid === null ? null : { id: lid, name: byId.get(lid) }, user: uid === null ? null : { id: uid } };
    });
    expect(response.data.shifts.nodes).toEqual(expected);
  });

  it('a record of the wrong shape is an UPSTREAM_BAD_RESPONSE for that item only', async () => {
    const response = await gql('records-malformed', '{ shifts(first: 100) { nodes { id } } locations(first: 3) { nodes { id } } }');
    expect(response.data.shifts.nodes.map((n: { id: string }) => n.id)).toEqual(SHIFTS.slice(0, 27).map(shiftId));
    expect(codes(response)).toEqual(['UPSTREAM_BAD_RESPONSE', 'UPSTREAM_BAD_RESPONSE', 'UPSTREAM_BAD_RESPONSE']);
    expect(response.data.locations.nodes).toHaveLength(3);
  });

  it('an unparseable or basic-offset start/end is never an INTERNAL_SERVER_ERROR: served, or UPSTREAM_BAD_RESPONSE for that field', async () => {
    const response = await gql('bad-dates', '{ shifts(first: 10) { nodes { id start end } } }');
    const nodes = response.data?.shifts?.nodes ?? [];
    expect(nodes.map((n: { id: string }) => n.id)).toEqual(['d_ok', 'd_basic_offset', 'd_garbage']);
    expect(nodes[0]).toEqual({ id: 'd_ok', start: '2026-11-23T09:00:00Z', end: '2026-11-23T17:00:00.250+01:00' });
    // `+0100` is an ISO 8601 offset (docs/upstream.md, "Record shapes": ISO 8601 with an offset): either served as the same instant or refused as a bad response.
    if (nodes[1].start !== null) expect(Date.parse(nodes[1].start)).toBe(Date.parse('2026-11-23T08:00:00Z'));
    expect(nodes[2].start).toBeNull();
    const notBadResponse = (response.errors ?? []).filter((e) => e.extensions?.code !== 'UPSTREAM_BAD_RESPONSE');
    expect(notBadResponse.map((e) => `${e.extensions?.code} at ${e.path?.join('.')}: ${e.message}`)).toEqual([]);
    expect(logs.join('')).not.toContain('unexpected error in a resolver');
  });

  it('shifts(first: 100) { location { name } } resolves 60 locations with as few locations calls as pages (batched)', async () => {
    const response = await gql('batched', '{ shifts(first: 100) { nodes { id location { id name } } } }');
    expect(codes(response)).toEqual([]);
    const names = new Map(BATCH_LOCATIONS.map((l) => [locationId(l), (l as { name: string }).name]));
    for (const node of response.data.shifts.nodes) expect(node.location.name).toBe(names.get(node.location.id));
    expect(response.data.shifts.nodes.map((n: { id: string }) => n.id)).toEqual(BATCH_SHIFTS.map(shiftId));
    expect(listCalls('batched', 'locations')).toHaveLength(Math.ceil(60 / 25));
    expect(listCalls('batched', 'shifts')).toHaveLength(Math.ceil(100 / 25));
  });

  it('_entities: known ids resolve, unknown ids are null in their place, one batch', async () => {
    const representations = [
      { __typename: 'Location', id: 'loc_002' },
      { __typename: 'Location', id: 'loc_nope' },
      { __typename: 'Shift', id: 'shf_0042' },
      { __typename: 'Location', id: '7003' },
      { __typename: 'Shift', id: 'shf_nope' },
      { __typename: 'Shift', id: String(90_000 + 99) },
    ];
    const response = await gql(
      'entities',
      'query($r: [_Any!]!) { _entities(representations: $r) { ... on Location { id name } ... on Shift { id start location { id } } } }',
      { r: representations },
    );
    expect(codes(response)).toEqual([]);
    expect(response.data._entities).toEqual([
      { id: 'loc_002', name: 'Site 2' },
      null,
      { id: 'shf_0042', start: (BATCH_SHIFTS[42] as { start: string }).start, location: { id: locationId(BATCH_LOCATIONS[42 % 60]) } },
      { id: '7003', name: 'Depot 3' },
      null,
      { id: '90099', start: (BATCH_SHIFTS[99] as { start: string }).start, location: { id: locationId(BATCH_LOCATIONS[99 % 60]) } },
    ]);
    // Each list scanned once to its end (the unknown ids), not once per id.
    expect(listCalls('entities', 'locations')).toHaveLength(Math.ceil(60 / 25));
    expect(listCalls('entities', 'shifts')).toHaveLength(Math.ceil(100 / 25));
  });
});

describe('tokens from a foreign identity provider', () => {
  it('posts a form to the path-prefixed token endpoint, secret in the body only, and reuses one token', async () => {
    const t = tenant('walk-page-honour');
    expect(t.tokenRequests).toBe(1);
    const [first] = t.tokenRequestLog;
    expect(first!.contentType).toMatch(/^application\/x-www-form-urlencoded/);
    expect(first!.authorization).toBeUndefined();
    expect(Object.fromEntries(first!.form)).toEqual({ grant_type: 'client_credentials', client_id: t.clientId, client_secret: t.clientSecret, scope: 'shifts.read' });
    for (const call of t.calls) expect(call.url).not.toContain(t.clientSecret);
  });

  it('a token response without `scope` is the requested scope (RFC 6749 5.1)', async () => {
    const response = await gql('omit-scope', '{ shifts(first: 3) { nodes { id } } }');
    expect(codes(response)).toEqual([]);
    expect(response.data.shifts.nodes.map((n: { id: string }) => n.id)).toEqual(SHIFT_IDS.slice(0, 3));
  });

  it('a scope not granted: FORBIDDEN for shifts only, no shifts call, locations served', async () => {
    const response = await gql('no-shifts-scope', '{ locations(first: 2) { nodes { id } } shifts(first: 2) { nodes { id } } }');
    expect(response.data.locations.nodes).toHaveLength(2);
    expect(response.data.shifts).toBeNull();
    expect(codes(response)).toEqual(['FORBIDDEN']);
    expect(listCalls('no-shifts-scope', 'shifts')).toHaveLength(0);
  });

  it('a token response whose scope lacks shifts.read (though requested): FORBIDDEN, no shifts call', async () => {
    const response = await gql('scope-narrowed', '{ locations(first: 2) { nodes { id } } shifts(first: 2) { nodes { id } } }');
    expect(response.data.locations.nodes).toHaveLength(2);
    expect(codes(response)).toEqual(['FORBIDDEN']);
    expect(listCalls('scope-narrowed', 'shifts')).toHaveLength(0);
  });

  it('an upstream 403 is FORBIDDEN', async () => {
    const response = await gql('upstream-403', '{ shifts(first: 2) { nodes { id } } }');
    expect(codes(response)).toEqual(['FORBIDDEN']);
  });

  it('an api_base with a trailing slash is the same origin', async () => {
    const response = await gql('api-base-slash', '{ locations { nodes { id } } }');
    expect(codes(response)).toEqual([]);
    expect(response.data.locations.nodes).toHaveLength(2);
  });

  it.each([
    ['other-tenant', 'bound to another tenant'],
    ['api-base-path', 'with an api_base carrying a path'],
    ['api-base-userinfo', 'with an api_base carrying userinfo'],
  ])('%s: a token %s is UPSTREAM_MISCONFIGURED, no data call, not re-fetched per request', async (name) => {
    for (let i = 0; i < 2; i += 1) {
      const response = await gql(name, '{ locations { nodes { id } } }');
      expect(response.data).toEqual({ locations: null });
      expect(codes(response)).toEqual(['UPSTREAM_MISCONFIGURED']);
    }
    expect(tenant(name).calls).toHaveLength(0);
    expect(tenant(name).tokenRequests).toBe(1);
  });

  it('401 on every call: UPSTREAM_UNAUTHORIZED after one renewal and one retry, never a loop', async () => {
    const response = await gql('always-401', '{ locations { nodes { id } } }');
    expect(codes(response)).toEqual(['UPSTREAM_UNAUTHORIZED']);
    expect(tenant('always-401').tokenRequests).toBe(2);
    expect(tenant('always-401').calls).toHaveLength(2);
    const [a, b] = tenant('always-401').calls;
    expect(a!.authorization).not.toBe(b!.authorization);
  });

  it('401 on every call: later requests do not each fetch a new token (the token endpoint is not called once per request)', async () => {
    const before = tenant('always-401').tokenRequests;
    for (let i = 0; i < 3; i += 1) {
      const response = await gql('always-401', '{ locations { nodes { id } } }');
      expect(codes(response)).toEqual(['UPSTREAM_UNAUTHORIZED']);
    }
    expect(tenant('always-401').tokenRequests - before).toBeLessThanOrEqual(1);
  });
});

describe('hostile page references', () => {
  const q = '{ shifts(first: 20) { nodes { id } } }';

  it.each([
    ['another origin', (_o: string, evil: string) => `${evil}${LIST_PATHS.shifts}?page=2&page_size=5`],
    ['a protocol-relative URL to another origin', (_o: string, evil: string) => `${evil.replace('http:', '')}${LIST_PATHS.shifts}?page=2`],
    ['another list on the same origin', (o: string) => `${o}${LIST_PATHS.locations}?page=2&page_size=5`],
    ['another path on the same origin', () => '/admin/export/?page=2'],
    ['a dot-segment path trick', () => `${LIST_PATHS.shifts}../../../../admin/?page=2`],
    ['userinfo on the same origin', (o: string) => `${o.replace('http://', 'http://svc:pw@')}${LIST_PATHS.shifts}?page=2`],
    ['a javascript: URL', () => 'javascript:alert(1)//?x'],
    ['a number', () => 2],
    ['an object', () => ({ href: '/api/public/v1/shifts/?page=2' })],
  ])('a next that is %s is UPSTREAM_BAD_RESPONSE and is never called', async (_name, next) => {
    hostileNext = next;
    const strayBefore = up.strayShardHits.length;
    const callsBefore = tenant('hostile-next').calls.length;
    const response = await gql('hostile-next', q);
    expect(response.data).toEqual({ shifts: null });
    expect(codes(response)).toEqual(['UPSTREAM_BAD_RESPONSE']);
    // Where the reference pointed is for the operator's log line, not for API clients.
    expect(response.errors![0]!.message).not.toMatch(new RegExp(`${new URL(up.evilOrigin).host}|${new URL(up.shardOrigin).host}|/api/|/admin`));
    expect(up.evilHits).toEqual([]);
    expect(up.strayShardHits.length).toBe(strayBefore);
    expect(tenant('hostile-next').calls.length - callsBefore).toBe(1);
  });

  it("the operator's log line keeps what the client is not told: where the reference pointed", () => {
    const failures = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.event === 'upstream_call_failed' && line.tenantId === tenant('hostile-next').tenantId);
    expect(failures).toContainEqual(expect.objectContaining({ code: 'UPSTREAM_BAD_RESPONSE', origin: up.shardOrigin, detail: expect.stringContaining(`another origin (${up.evilOrigin})`) }));
  });

  it('a redirect to another origin is not followed (no bearer token there) and is an UPSTREAM_* error', async () => {
    const response = await gql('redirect', '{ locations { nodes { id } } }');
    expect(response.data).toEqual({ locations: null });
    expect(codes(response)).toEqual(['UPSTREAM_BAD_RESPONSE']);
    expect(up.evilHits).toEqual([]);
  });

  it('a next that loops back to the first page is caught (first: 100)', async () => {
    const response = await gql('loop-to-first', '{ shifts(first: 100) { nodes { id } } }');
    expect(codes(response)).toEqual(['UPSTREAM_BAD_RESPONSE']);
  });

  it('a next that loops back to the first page never yields the same shift twice (first: 50)', async () => {
    const response = await gql('loop-to-first', '{ shifts(first: 50) { nodes { id } } }');
    const ids: string[] = response.data?.shifts?.nodes?.map((n: { id: string }) => n.id) ?? [];
    expect({ duplicates: ids.length - new Set(ids).size, codes: codes(response) }).toEqual({ duplicates: 0, codes: ['UPSTREAM_BAD_RESPONSE'] });
  });

  it("a live poll walks the list through the tenant reader: a next that loops back ends the poll after two calls (the walk's guard), not at the call budget, and the subscription stays open", async () => {
    const polls = () => counterTotal(server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>, { outcome: 'error' });
    const before = await polls();
    const callsBefore = listCalls('loop-to-first', 'shifts').length;
    const client = liveClient(server.url, { 'x-tenant-id': tenant('loop-to-first').tenantId });
    try {
      const received = collect(client, 'subscription { shiftChanges { kind nodeId } }');
      await waitFor(async () => (await polls()) > before, 'the first poll failed');
      expect(listCalls('loop-to-first', 'shifts').length - callsBefore).toBe(2);
      expect({ completed: received.completed, error: received.error, results: received.results }).toEqual({ completed: false, error: undefined, results: [] });
    } finally {
      await client.dispose();
    }
  });

  it('a next that is the bare list URL (the first page again) with has_more: true is not read as the end of the list', async () => {
    const response = await gql('loop-bare-path', '{ shifts(first: 40) { nodes { id } pageInfo { hasNextPage } } }');
    // The upstream said has_more: true; answering hasNextPage: false with 25 of 61 shifts silently truncates.
    expect(codes(response)).toEqual(['UPSTREAM_BAD_RESPONSE']);
  });
});

describe('hostile statuses and bodies', () => {
  const q = '{ locations(first: 5) { nodes { id } } }';

  it('429 with Retry-After as an HTTP date, then success: waits and serves', async () => {
    const response = await gql('rl-date-then-ok', q);
    expect(codes(response)).toEqual([]);
    expect(response.data.locations.nodes).toHaveLength(5);
    const [refused, retried] = listCalls('rl-date-then-ok', 'locations');
    expect(retried).toBeDefined();
    // Time is the subject: the retry came no earlier than the date the 429 named (a second later, in whole seconds).
    expect(retried!.receivedAt).toBeGreaterThanOrEqual(Math.floor((refused!.receivedAt + 1000) / 1000) * 1000);
  });

  it('429 every time (Retry-After a past HTTP date): bounded retries, then UPSTREAM_RATE_LIMITED', async () => {
    const response = await gql('rl-always-past-date', q);
    expect(codes(response)).toEqual(['UPSTREAM_RATE_LIMITED']);
    expect(listCalls('rl-always-past-date', 'locations')).toHaveLength(3);
  });

  it('429 with Retry-After an hour away: UPSTREAM_RATE_LIMITED at once, with retryAfterSeconds', async () => {
    const rateLimitRetries = async () => (await counterTotal(server.metrics.resilience.retries, { reason: 'retry-after' })) + (await counterTotal(server.metrics.resilience.retries, { reason: 'rate-limited' }));
    const retriesBefore = await rateLimitRetries();
    const response = await gql('rl-always-hour', q);
    expect(codes(response)).toEqual(['UPSTREAM_RATE_LIMITED']);
    // The hour is capped to the tenant window we keep (WFS_TENANT_RETRY_AFTER_MAX_S, 300 s), and that is what the client is told.
    expect(response.errors![0]!.extensions!.retryAfterSeconds).toBeGreaterThan(290);
    expect(response.errors![0]!.extensions!.retryAfterSeconds).toBeLessThanOrEqual(300);
    // At once: one call, no retry waited for (a wait over 2 s is never taken within a request).
    expect(listCalls('rl-always-hour', 'locations')).toHaveLength(1);
    expect(await rateLimitRetries()).toBe(retriesBefore);
  });

  it('a 500 then success is served (docs/upstream.md, "How REST maps onto GraphQL": 5xx, timeouts, unreachable: one retry)', async () => {
    const response = await gql('err500-then-ok', q);
    expect(codes(response)).toEqual([]);
    expect(response.data?.locations?.nodes).toHaveLength(5);
  });

  it('503 every time: one retry, then UPSTREAM_UNAVAILABLE', async () => {
    const response = await gql('err503-always', q);
    expect(codes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(listCalls('err503-always', 'locations')).toHaveLength(2);
  });

  it.each([['not-json'], ['not-envelope']])('%s: UPSTREAM_BAD_RESPONSE', async (name) => {
    const response = await gql(name, q);
    expect(response.data).toEqual({ locations: null });
    expect(codes(response)).toEqual(['UPSTREAM_BAD_RESPONSE']);
  });

  it('a body over 8 MiB is refused as UPSTREAM_BAD_RESPONSE, not downloaded twice, and the server lives on', async () => {
    const response = await gql('huge-body', q);
    expect(response.data).toEqual({ locations: null });
    expect({ codes: codes(response), calls: listCalls('huge-body', 'locations').length, message: response.errors?.[0]?.message }).toEqual({
      codes: ['UPSTREAM_BAD_RESPONSE'],
      calls: 1,
      message: expect.any(String),
    });
    expect((await fetch(server.url.replace('/graphql', '/health'))).status).toBe(200);
  });
});

describe('bounded time (queries started in beforeAll, run beside the other tests)', () => {
  it.each([
    ['a token endpoint that never answers: UPSTREAM_UNAVAILABLE before the router gives up', 'token'],
    ['a list call whose headers never come: UPSTREAM_UNAVAILABLE before the router (20 s) gives up', 'headers'],
    ['a list body that never finishes: UPSTREAM_UNAVAILABLE before the router (20 s) gives up', 'body'],
  ] as const)('%s', async (_name, hang) => {
    const result = await hangs[hang];
    expect({ code: result.response && codes(result.response), failure: result.failure }).toEqual({ code: ['UPSTREAM_UNAVAILABLE'], failure: undefined });
    // Time is the subject: the answer must come before the router's deadline.
    expect(result.elapsedMs).toBeLessThan(ROUTER_SUBGRAPH_TIMEOUT_MS);
  });

  it('five slow pages (4.2 s each, none near a timeout): an answer (data or UPSTREAM_UNAVAILABLE) before the router (20 s) gives up', async () => {
    const result = await hangs.slow;
    expect(result.failure).toBeUndefined();
    expect(listCalls('slow-pages', 'shifts').length).toBeGreaterThanOrEqual(1);
    // Time is the subject: the answer must come before the router's deadline.
    expect(result.elapsedMs).toBeLessThan(ROUTER_SUBGRAPH_TIMEOUT_MS);
  });
});

describe('after everything', () => {
  it('no request ever reached another origin; every shard call carried its own tenant\'s token', () => {
    expect(up.evilHits).toEqual([]);
    for (const t of up.tenants.values()) {
      for (const call of t.calls) expect(call.authorization).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    }
  });

  it('no client secret and no access token in any log line', () => {
    const text = logs.join('');
    for (const t of up.tenants.values()) expect(text).not.toContain(t.clientSecret);
    for (const token of up.issuedTokens) expect(text).not.toContain(token.split('.')[2]);
  });
});
