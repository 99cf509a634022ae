import { AnswerTags, tagsIn } from '../../router/answerTags';
import { applyInvalidations, cacheSession, identitySettings } from '../../router/hiveResponseCache';
import { ResponseStore } from '../../router/responseStore';

/**
 * router/responseStore.ts and router/answerTags.ts alone (the gateway runs them in
 * test/e2e/hive-gateway.test.ts): the store's bound in keys, an answer's index keys living
 * and dying with it, the word about answers evicted unread, and invalidation by the tags
 * each answer carried. Keys are laid out as Hive's response cache lays them out.
 */

const id = (n: number) => n.toString(16).padStart(64, '0');
const answer = (n: number) => `response-cache:${id(n)}`;
/** An answer and its index keys, as the response cache writes them: the answer, then both keys per entity. */
function store(target: ResponseStore, n: number, entities: number, ttl = 60): void {
  target.set(answer(n), { data: n }, { ttl });
  for (let entity = 0; entity < entities; entity++) {
    target.set(`response-cache:Shift.s${entity}:${id(n)}`, {}, { ttl });
    target.set(`response-cache:${id(n)}:Shift.s${entity}`, {}, { ttl });
  }
}

describe('ResponseStore', () => {
  let now = 0;
  const clock = () => now;
  beforeEach(() => {
    now = 1_000_000;
  });

  it('counts an answer as 1 + 2 keys per entity, and evicts the least recently read answer with its index keys', () => {
    const cache = new ResponseStore({ maxKeys: 30, now: clock });
    store(cache, 1, 4);
    store(cache, 2, 4);
    store(cache, 3, 4);
    expect(cache.size).toBe(27);
    expect(cache.get(answer(1))).toEqual({ data: 1 });
    store(cache, 4, 4);
    // Answer 2 was the least recently read: it went, and its index keys with it.
    expect(cache.get(answer(2))).toBeUndefined();
    expect(cache.getKeysByPrefix(`response-cache:${id(2)}`)).toEqual([]);
    expect(cache.getKeysByPrefix('response-cache:Shift.s0:').sort()).toEqual([1, 3, 4].map((n) => `response-cache:Shift.s0:${id(n)}`));
    expect(cache.size).toBe(27);
    expect(cache.stats).toEqual({ hits: 1, evicted: 1, evictedUnread: 1 });
  });

  it('says once, then at most once a minute, that answers were evicted before any read found them', () => {
    const lines: string[] = [];
    const cache = new ResponseStore({ maxKeys: 10, now: clock, log: { warn: (line: unknown) => void lines.push(String(line)) } });
    for (let n = 1; n <= 4; n++) store(cache, n, 2);
    expect(lines).toEqual([expect.stringMatching(/^response cache: 1 answer\(s\) evicted before any read found them \(bound 10 keys, 1 since start\)/)]);
    now += 59_999;
    store(cache, 5, 2);
    expect(lines).toHaveLength(1);
    now += 1;
    store(cache, 6, 2);
    expect(lines.at(-1)).toMatch(/^response cache: 3 answer\(s\) evicted before any read found them \(bound 10 keys, 4 since start\)/);
    // An answer read before it is evicted is not one of them.
    expect(cache.get(answer(5))).toBeDefined();
    expect(cache.get(answer(6))).toBeDefined();
    store(cache, 7, 2);
    store(cache, 8, 2);
    expect(cache.stats).toMatchObject({ evicted: 6, evictedUnread: 4 });
  });

  it('makes room from what has expired before it evicts an answer still live', () => {
    const cache = new ResponseStore({ maxKeys: 10, now: clock });
    store(cache, 1, 2, 60);
    store(cache, 2, 2, 1);
    now += 1_000;
    expect(cache.size).toBe(10);
    store(cache, 3, 2, 60);
    expect(cache.get(answer(1))).toEqual({ data: 1 });
    expect(cache.stats).toEqual({ hits: 1, evicted: 0, evictedUnread: 0 });
    // An expired answer is not served.
    store(cache, 4, 0, 1);
    now += 1_000;
    expect(cache.get(answer(4))).toBeUndefined();
  });

  it('drops the answers that carried a tag, and those whose tags nobody heard; the others stay', () => {
    const tags = new Map<string, readonly string[]>([
      [id(1), ['wfs-aa:shifts']],
      [id(2), ['wfs-bb:shifts']],
      [id(3), ['wfs-aa:locations', 'wfs-aa:shifts']],
    ]);
    const cache = new ResponseStore({ maxKeys: 100, now: clock, tagsOf: (answerId) => tags.get(answerId) });
    for (let n = 1; n <= 4; n++) store(cache, n, 1);
    cache.set('other-plugin-key', 'kept');
    expect(cache.dropTagged(['wfs-aa:shifts'])).toBe(3);
    expect([1, 2, 3, 4].map((n) => cache.get(answer(n)) !== undefined)).toEqual([false, true, false, false]);
    expect(cache.getKeysByPrefix('response-cache:Shift.s0:')).toEqual([`response-cache:Shift.s0:${id(2)}`]);
    expect(cache.get('other-plugin-key')).toBe('kept');
    expect(cache.dropTagged(['wfs-aa:shifts'])).toBe(0);
    expect(cache.dropAnswers()).toBe(1);
    expect(cache.get('other-plugin-key')).toBe('kept');
  });

  it('refuses a bound that is not a positive integer', () => {
    expect(() => new ResponseStore({ maxKeys: 0 })).toThrow(/maxKeys must be a positive integer/);
  });
});

describe('AnswerTags', () => {
  it("files a request's tags, from every subgraph answer it got, under its answer's id", () => {
    const answers = new AnswerTags();
    const context = {};
    const key = answers.key({ documentString: '{ shifts { nodes { id } } }', variableValues: { b: 1, a: 2 }, sessionId: 's', context });
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    // The same request with its variables in another order: the same id; another session: another.
    expect(answers.key({ documentString: '{ shifts { nodes { id } } }', variableValues: { a: 2, b: 1 }, sessionId: 's' })).toBe(key);
    expect(answers.key({ documentString: '{ shifts { nodes { id } } }', variableValues: { a: 2, b: 1 }, sessionId: 't' })).not.toBe(key);
    expect(answers.tagsOf(key)).toBeUndefined();
    answers.heard(context, tagsIn({ apolloCacheTags: ['wfs-aa:shifts'] }));
    answers.heard(context, tagsIn({ apolloEntityCacheTags: [['wfs-aa:locations', 'wfs-aa:locations:l1'], ['wfs-aa:locations'], 7] }));
    answers.heard({}, ['wfs-bb:shifts']);
    expect(answers.tagsOf(key)).toEqual(['wfs-aa:shifts', 'wfs-aa:locations', 'wfs-aa:locations:l1']);
  });

  it('forgets tags no answer was stored under after a minute', () => {
    let now = 0;
    const answers = new AnswerTags(() => now);
    const first = {};
    const second = {};
    const firstKey = answers.key({ documentString: 'a', variableValues: {}, sessionId: 's', context: first });
    const secondKey = answers.key({ documentString: 'b', variableValues: {}, sessionId: 's', context: second });
    answers.heard(first, ['t1']);
    now = 60_000;
    answers.heard(second, ['t2']);
    expect(answers.tagsOf(firstKey)).toBeUndefined();
    expect(answers.tagsOf(secondKey)).toEqual(['t2']);
  });
});

describe("the gateway's session and invalidations on the shipped store", () => {
  const asked = (headers: Record<string, string>) => new Request('http://gateway/graphql', { method: 'POST', headers });

  it('keys on the tenant header the subgraph reads and Authorization together; none without the one the mode needs', () => {
    const trusted = identitySettings({ WFS_TENANT_HEADER: 'X-Company' });
    const service = { authorization: 'Bearer shared-service-token' };
    const a = cacheSession(asked({ 'x-company': 'a', ...service }), trusted);
    const b = cacheSession(asked({ 'x-company': 'b', ...service }), trusted);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(b).not.toBe(a);
    expect(cacheSession(asked({ 'x-company': 'a', ...service }), trusted)).toBe(a);
    // The header of the default name is not the one this subgraph reads.
    expect(cacheSession(asked({ 'x-tenant-id': 'a', ...service }), trusted)).toBeNull();
    const verified = identitySettings({ WFS_JWKS_URL: 'https://id.example.com/jwks.json' });
    expect(cacheSession(asked({ 'x-tenant-id': 'a' }), verified)).toBeNull();
    expect(cacheSession(asked({ authorization: 'Bearer one' }), verified)).not.toBe(cacheSession(asked({ authorization: 'Bearer two' }), verified));
  });

  it("drops a list's answers for its tag, a record's list's answers for the record's tag, and every answer for a type", async () => {
    const tags = new Map<string, readonly string[]>([
      [id(1), ['wfs-aa:shifts']],
      [id(2), ['wfs-bb:shifts']],
    ]);
    const cache = new ResponseStore({ maxKeys: 100, tagsOf: (answerId) => tags.get(answerId) });
    const fill = () => [1, 2].forEach((n) => store(cache, n, 1));
    const held = () => [1, 2].map((n) => cache.get(answer(n)) !== undefined);
    fill();
    expect(await applyInvalidations(cache, [{ kind: 'cache_tag', subgraphs: ['wfs'], cache_tag: 'wfs-aa:shifts' }])).toBe(1);
    expect(held()).toEqual([false, true]);
    fill();
    expect(await applyInvalidations(cache, [{ kind: 'cache_tag', subgraphs: ['wfs'], cache_tag: 'wfs-bb:shifts:s9' }])).toBe(1);
    expect(held()).toEqual([true, false]);
    fill();
    expect(await applyInvalidations(cache, [{ kind: 'type', subgraph: 'wfs', type: 'Shift' }])).toBe(2);
    expect(held()).toEqual([false, false]);
  });
});
