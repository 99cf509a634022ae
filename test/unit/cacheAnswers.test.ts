import { HeaderMap } from '@apollo/server';
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { WholeAnswers } from '../../src/cache/answers';
import { UNIT_BYTES } from '../../src/cache/budget';
import { bodyDigest, CachePolicy } from '../../src/cache/policy';
import { CacheTags } from '../../src/cache/tags';
import type { GraphQLContext } from '../../src/graphql/data/context';
import { answerStillCurrent, type AnswerSources } from '../../src/upstream/reading/tenantReader';
import { RESOURCES } from '../../src/upstream/resources';

/**
 * The store of answers kept whole (src/cache/answers.ts) alone: its key, its
 * `max-age`, its checks of the indexes an answer was read from, and its byte budget.
 * Requests are fakes that carry what the handler and Apollo hand it: a context whose
 * company resolves, and (for a miss) the decision the cache policy makes for the
 * answer (the last test: the real policy), then `keep`.
 */

let clock = 1_000_000;
let charged = 0;
const WINDOW_SECONDS = 10;

/** An index as an answer sees it (keptPages.ts, `IndexEpoch`). */
function index() {
  return {
    epoch: 0,
    isReleased: false,
    lifetimeStart: clock,
    expiresAt: clock + WINDOW_SECONDS * 1000,
    get freshUntil() {
      return this.expiresAt;
    },
    expired() {
      return clock >= this.expiresAt;
    },
  };
}

/** A store; the tests but the last keep an answer the first time it is asked (`minUses` 1), the last one checks the shipped 2. */
function store(maxBytes = 1_000_000, minUses = 1, remembered?: number): WholeAnswers {
  const budget = { maxBytes, charge: (units: number) => void (charged += units) };
  return new WholeAnswers({ freshnessSeconds: WINDOW_SECONDS, now: () => clock, budget, sweepEveryMs: 0, minUses, ...(remembered !== undefined && { remembered }) });
}

/** The policy, at this window, in trusted-header mode: which requests are identical, and (last test) the decision. */
const policy = new CachePolicy({ freshnessSeconds: WINDOW_SECONDS, tags: new CacheTags(Buffer.alloc(32)), resources: undefined as never, identityHeaders: ['x-tenant-id'], now: () => clock });

function keyOf(context: GraphQLContext, body: string, headers: Record<string, string>): Promise<string | undefined> {
  return policy.requestKey(context, { headers, digest: bodyDigest(body), search: false });
}

function contextOf(tenantId: string | undefined, sources: AnswerSources, until: number): GraphQLContext {
  const freshness = { until, answerSources: () => (answerStillCurrent(sources) ? sources : undefined) };
  const reader = { freshness, stillServes: async (kept: AnswerSources) => answerStillCurrent(kept) };
  const tenant = { tenantId, reader };
  return {
    tenant: async () => {
      if (tenantId === undefined) throw new Error('refused');
      return tenant;
    },
    knownTenant: () => (tenantId === undefined ? undefined : tenant),
    itemErrors: [],
    signal: new AbortController().signal,
    cache: { keepAs: undefined, decision: undefined },
    release: () => undefined,
  } as unknown as GraphQLContext;
}

/** One request: a hit's body, or undefined after it was executed (answered `answer`) and offered to the store. */
async function ask(answers: WholeAnswers, tenantId: string | undefined, body: string, made: { sources: AnswerSources; until: number; answer?: string }): Promise<{ body: string; headers: Record<string, string> } | undefined> {
  const context = contextOf(tenantId, made.sources, made.until);
  const headers = { 'content-type': 'application/json', ...(tenantId && { 'x-tenant-id': tenantId }) };
  const key = await keyOf(context, body, headers);
  const hit = key === undefined ? undefined : await answers.lookup(context, key);
  if (hit) return { body: hit.body.toString(), headers: hit.headers };
  // The decision the policy makes for an answer read from `made.sources`, kept whole if the store asked for it.
  const maxAge = Math.floor((made.until - clock) / 1000);
  const sources = context.cache!.keepAs !== undefined && answerStillCurrent(made.sources) ? made.sources : undefined;
  context.cache!.decision = { maxAge, vary: 'x-tenant-id', ...(sources && { keep: { until: made.until, sources, operationName: 'Q', lastSecond: () => undefined } }) };
  answers.keep(context, 200, { 'content-type': 'application/json', 'cache-control': `private, max-age=${maxAge}`, vary: 'x-tenant-id' }, made.answer ?? `{"data":{"for":"${tenantId}"}}`);
  return undefined;
}

const locations = RESOURCES.find((resource) => resource.name === 'locations')!;

beforeEach(() => {
  charged = 0;
});

it("serves an answer again to its company only, its max-age what is left of the answer's own freshness, until it ends", async () => {
  const answers = store();
  const source = index();
  const made = { sources: [{ resource: locations, index: source, epoch: 0 }], until: clock + 7_500 };
  expect(await ask(answers, 'a', '{"query":"{ x }"}', made)).toBeUndefined();
  clock += 1_000;
  const hit = await ask(answers, 'a', '{"query":"{ x }"}', made);
  expect(hit).toEqual({ body: '{"data":{"for":"a"}}', headers: { 'content-type': 'application/json', 'cache-control': 'private, max-age=6', vary: 'x-tenant-id', 'content-length': '20' } });
  // Another company, the same bytes: its own answer. Another body: another answer. A refused identity: nothing.
  expect(await ask(answers, 'b', '{"query":"{ x }"}', made)).toBeUndefined();
  expect((await ask(answers, 'b', '{"query":"{ x }"}', made))?.body).toBe('{"data":{"for":"b"}}');
  expect(await ask(answers, 'a', '{"query":"{ x } "}', made)).toBeUndefined();
  expect(await ask(answers, undefined, '{"query":"{ x }"}', made)).toBeUndefined();
  expect(answers.size).toBe(3);
  // Less than a second left, and no answer of that second worked out (the decision here gives none): not served.
  clock += 5_600;
  expect(await ask(answers, 'a', '{"query":"{ x }"}', { ...made, until: clock - 1 })).toBeUndefined();
  clock += 10_000;
  answers.sweep();
  expect(answers.size).toBe(0);
  expect(charged).toBe(0);
});

it('is not served once an index it was read from forgot what it held, was released or expired', async () => {
  const answers = store();
  const [one, two] = [index(), index()];
  const made = { sources: [{ resource: locations, index: one, epoch: 0 }, { resource: locations, index: two, epoch: 0 }], until: clock + 9_000 };
  await ask(answers, 'a', 'q1', made);
  expect(await ask(answers, 'a', 'q1', made)).toBeDefined();
  two.epoch += 1;
  expect(await ask(answers, 'a', 'q1', made)).toBeUndefined();
  // Not kept again either: its sources are not current.
  expect(await ask(answers, 'a', 'q1', made)).toBeUndefined();
  const fresh = { sources: [{ resource: locations, index: one, epoch: 0 }], until: clock + 9_000 };
  await ask(answers, 'a', 'q2', fresh);
  expect(await ask(answers, 'a', 'q2', fresh)).toBeDefined();
  one.isReleased = true;
  expect(await ask(answers, 'a', 'q2', fresh)).toBeUndefined();
  const other = index();
  const expiring = { sources: [{ resource: locations, index: other, epoch: 0 }], until: clock + 9_000 };
  await ask(answers, 'a', 'q3', expiring);
  other.expiresAt = clock;
  expect(await ask(answers, 'a', 'q3', expiring)).toBeUndefined();
  expect(answers.size).toBe(0);
  expect(charged).toBe(0);
});

it('holds its byte budget, least recently used first out, each answer charged to the memory budget in record units', async () => {
  // Room for about 40 answers of 600 bytes with their keys.
  const answers = store(40_000);
  const made = { sources: [{ resource: locations, index: index(), epoch: 0 }], until: clock + 9_000, answer: `{"data":{"text":"${'x'.repeat(580)}"}}` };
  for (let i = 0; i < 60; i++) {
    await ask(answers, 'a', `q${i}`, made);
    // q0 is read again and again: the most recently used, never the one to go.
    if (i > 0) expect(await ask(answers, 'a', 'q0', made)).toBeDefined();
  }
  expect(answers.heldBytes).toBeLessThanOrEqual(40_000);
  expect(answers.size).toBeGreaterThan(30);
  expect(answers.size).toBeLessThan(60);
  expect(await ask(answers, 'a', 'q1', made)).toBeUndefined();
  expect(await ask(answers, 'a', 'q59', made)).toBeDefined();
  // Each answer's bytes rounded up to record units: at least the bytes held, less than a unit more per answer.
  expect(charged * UNIT_BYTES).toBeGreaterThanOrEqual(answers.heldBytes);
  expect(charged * UNIT_BYTES).toBeLessThan(answers.heldBytes + answers.size * UNIT_BYTES);
  // An answer larger than a share of the budget is not kept.
  await ask(answers, 'a', 'large', { ...made, answer: 'x'.repeat(5_000) });
  expect(await ask(answers, 'a', 'large', made)).toBeUndefined();
  answers.close();
  expect(charged).toBe(0);
});

it('keeps an answer, by default, only the second time its request is asked within the window (nginx\'s proxy_cache_min_uses), or at once after a kept one ended', async () => {
  const REMEMBERED = 50;
  const answers = store(1_000_000, 2, REMEMBERED);
  const made = () => ({ sources: [{ resource: locations, index: index(), epoch: 0 }], until: clock + 9_000 });
  const body = '{"query":"{ twice }"}';
  expect(await ask(answers, 'a', body, made())).toBeUndefined();
  expect([answers.size, charged]).toEqual([0, 0]);
  expect(await ask(answers, 'a', body, made())).toBeUndefined();
  expect(answers.size).toBe(1);
  expect((await ask(answers, 'a', body, made()))?.body).toBe('{"data":{"for":"a"}}');
  // Asked once, then again once the window has passed: each asking is the first again.
  const rare = '{"query":"{ rare }"}';
  expect(await ask(answers, 'a', rare, made())).toBeUndefined();
  clock += WINDOW_SECONDS * 1000 + 1;
  expect(await ask(answers, 'a', rare, made())).toBeUndefined();
  expect(answers.size).toBe(1);
  // Another company asking the same bytes is its own count.
  expect(await ask(answers, 'b', body, made())).toBeUndefined();
  expect(answers.size).toBe(1);
  // At most `remembered` requests asked once are remembered, the oldest forgotten first.
  for (let i = 0; i <= REMEMBERED; i++) await ask(answers, 'c', `{"query":"{ n${i} }"}`, made());
  expect(await ask(answers, 'c', '{"query":"{ n0 }"}', made())).toBeUndefined();
  expect(answers.size).toBe(1);
  expect(await ask(answers, 'c', `{"query":"{ n${REMEMBERED} }"}`, made())).toBeUndefined();
  expect(answers.size).toBe(2);
  // The answer kept for `body` ended with the window passed above. A request whose answer
  // was kept is asked often: the first asking after its end leaves its answer at once.
  expect(await ask(answers, 'a', body, made())).toBeUndefined();
  expect((await ask(answers, 'a', body, made()))?.body).toBe('{"data":{"for":"a"}}');
  // Once it is let go by the sweep, the request is asked once more first, as any other.
  clock += WINDOW_SECONDS * 1000 + 1;
  answers.sweep();
  expect(await ask(answers, 'a', body, made())).toBeUndefined();
  expect(await ask(answers, 'a', body, made())).toBeUndefined();
  expect((await ask(answers, 'a', body, made()))?.body).toBe('{"data":{"for":"a"}}');
  answers.close();
});

it('answers, in the last second of its freshness, what the plain path then answers from the same indexes: no-store, untagged', async () => {
  const answers = store();
  const plugin = policy.plugin();
  /** Apollo's side of a request answering `{ x }` (its context's reader says what it was made of), through the real cache policy: its decision, headers and text. */
  const execute = async (context: GraphQLContext, extensions?: Record<string, unknown>) => {
    Object.assign((context.knownTenant() as unknown as { reader: { freshness: object } }).reader.freshness, { lists: new Set(['locations']) });
    const result = { data: { x: 1 }, ...(extensions && { extensions }) };
    const response = { http: { headers: new HeaderMap() }, body: { kind: 'single', singleResult: result } };
    const operation = parse('{ x }').definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
    const hooks = { contextValue: context, operation, operationName: null, request: { http: { headers: new HeaderMap([['x-tenant-id', 'a']]) } }, response } as never;
    await (await plugin.requestDidStart!({} as never))!.willSendResponse!(hooks);
    return { cacheControl: response.http.headers.get('cache-control')!, headers: Object.fromEntries(response.http.headers), text: JSON.stringify(result) };
  };
  const contextFor = (sources: AnswerSources) => contextOf('a', sources, Math.min(...sources.map(({ index }) => index.freshUntil)));
  /** The plain path's answer now, not offered to the store. */
  const plainNow = (sources: AnswerSources, extensions?: Record<string, unknown>) => execute(contextFor(sources), extensions);
  /** One request as the handler runs it: the store's hit, or undefined after it executed and offered its answer. */
  const request = async (body: string, sources: AnswerSources, extensions?: Record<string, unknown>) => {
    const context = contextFor(sources);
    const headers = { 'content-type': 'application/json', 'x-tenant-id': 'a' };
    const hit = await answers.lookup(context, (await keyOf(context, body, headers))!);
    if (hit) return { cacheControl: hit.headers['cache-control'], text: hit.body.toString(), length: hit.headers['content-length'] };
    const plain = await execute(context, extensions);
    answers.keep(context, 200, { 'content-type': 'application/json', ...plain.headers }, plain.text);
    return undefined;
  };
  for (const extensions of [undefined, { other: [1] }]) {
    const source = index();
    const sources = [{ resource: locations, index: source, epoch: 0 }];
    const body = `{"query":"{ x }","n":${JSON.stringify(extensions ?? null)}}`;
    expect(await request(body, sources, extensions)).toBeUndefined();
    const kept = await request(body, sources, extensions);
    expect(kept?.cacheControl).toBe(`private, max-age=${WINDOW_SECONDS}`);
    expect(JSON.parse(kept!.text).extensions.apolloCacheTags).toHaveLength(1);
    clock += WINDOW_SECONDS * 1000 - 400;
    // max-age would be 0: the plain path's answer then, byte for byte, without executing.
    const plain = await plainNow(sources, extensions);
    expect(plain.cacheControl).toBe('no-store');
    const hit = await request(body, sources, extensions);
    expect(hit).toEqual({ cacheControl: 'no-store', text: plain.text, length: String(Buffer.byteLength(plain.text)) });
    expect(JSON.parse(hit!.text)).toEqual({ data: { x: 1 }, ...(extensions && { extensions }) });
    clock += 400;
    expect(await request(body, sources, extensions)).toBeUndefined();
  }
  // A poll confirmed the index (its lifetime moved on): the plain path has more than a second left, so the request executes.
  const watched = index();
  const sources = [{ resource: locations, index: watched, epoch: 0 }];
  await request('{"query":"{ watched }"}', sources);
  await request('{"query":"{ watched }"}', sources);
  clock += WINDOW_SECONDS * 1000 - 400;
  watched.expiresAt = clock + WINDOW_SECONDS * 1000;
  expect((await plainNow(sources)).cacheControl).toBe(`private, max-age=${WINDOW_SECONDS}`);
  expect(await request('{"query":"{ watched }"}', sources)).toBeUndefined();
  expect((await request('{"query":"{ watched }"}', sources))?.cacheControl).toBe(`private, max-age=${WINDOW_SECONDS}`);
  answers.close();
});
