import { ApolloServer, HeaderMap } from '@apollo/server';
import { buildSchema } from 'graphql';
import type { GraphQLContext } from '../../src/graphql/data/context';
import { createErrorFormatter } from '../../src/graphql/errors';
import { bodyDigest, CachePolicy } from '../../src/cache/policy';
import { CacheTags } from '../../src/cache/tags';
import { SharedRequests } from '../../src/http/sharedRequests';
import { UpstreamError } from '../../src/upstream/errors';

/**
 * Which answers a leader hands to the identical requests that joined it
 * (src/http/sharedRequests.ts), with a real Apollo Server over a one-field schema whose
 * resolver waits at a gate the test opens, then answers or fails as the test says.
 */

const BODY = '{"query":"{ value }"}';
const HEADERS = { 'content-type': 'application/json' };

let executions = 0;
let gate: { open: () => void; opened: Promise<void> };
/** What each execution does once the gate opens, in order; past the list it answers. */
let failures: Array<UpstreamError | undefined> = [];

function newGate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gate = { open, opened };
}

const sharing = new SharedRequests();
const apollo = new ApolloServer<GraphQLContext>({
  schema: buildSchema('type Query { value: String }'),
  rootValue: {
    value: async (_args: unknown, context: GraphQLContext) => {
      const execution = ++executions;
      if (context.signal.aborted) throw new Error('cancelled');
      await Promise.race([gate.opened, new Promise((_resolve, reject) => context.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true }))]);
      const failure = failures[execution - 1];
      if (failure) throw failure;
      return `answer ${execution}`;
    },
  },
  plugins: [sharing.plugin()],
  stringifyResult: sharing.stringify,
  formatError: createErrorFormatter(() => undefined),
});

/** Which requests are identical is the cache policy's (its `requestKey`); at a window of 0 it keeps nothing. */
const policy = new CachePolicy({ freshnessSeconds: 0, tags: new CacheTags(Buffer.alloc(32)), resources: undefined as never, identityHeaders: ['x-tenant-id'], now: Date.now });

beforeAll(() => apollo.start());
afterAll(() => apollo.stop());
beforeEach(() => {
  executions = 0;
  failures = [];
  newGate();
});

/** One request as the GraphQL handler runs it: its key, begin sharing, execute, finish. */
async function run(signal: AbortSignal = new AbortController().signal): Promise<{ data?: { value: string | null }; errors?: Array<{ extensions: { code: string } }> }> {
  const context = { signal, tenant: async () => ({ tenantId: 'tenant-1' }) } as unknown as GraphQLContext;
  const key = await policy.requestKey(context, { headers: HEADERS, digest: bodyDigest(BODY), search: false });
  const finish = key === undefined || signal.aborted ? undefined : sharing.begin(context, key);
  try {
    const headers = new HeaderMap([['content-type', 'application/json']]);
    const response = await apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest: { method: 'POST', headers, search: '', body: JSON.parse(BODY) }, context: async () => context });
    if (response.body.kind !== 'complete') throw new Error('expected a complete body');
    return JSON.parse(response.body.string);
  } finally {
    finish?.();
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function whenExecuting(count: number): Promise<void> {
  for (let i = 0; i < 100 && executions < count; i++) await tick();
  expect(executions).toBe(count);
}

describe('SharedRequests', () => {
  it('hands the lead to one joiner when the leader leaves; the other joiners take its answer', async () => {
    const leaving = new AbortController();
    const leader = run(leaving.signal).catch((error: unknown) => error);
    await whenExecuting(1);
    const joiners = [run(), run(), run()];
    await tick();
    leaving.abort();
    await leader;
    await whenExecuting(2);
    gate.open();
    const answers = await Promise.all(joiners);
    expect(answers.map((answer) => answer.data?.value)).toEqual(['answer 2', 'answer 2', 'answer 2']);
    expect(executions).toBe(2);
  });

  it('does not share an answer that depended on the leader\'s moment (a momentary failure): a joiner leads and its answer is shared', async () => {
    failures = [new UpstreamError('UPSTREAM_RATE_LIMITED', 'too many upstream calls are waiting', { momentary: true })];
    const leader = run();
    await whenExecuting(1);
    const joiners = [run(), run()];
    await tick();
    gate.open();
    expect((await leader).errors?.map((error) => error.extensions.code)).toEqual(['UPSTREAM_RATE_LIMITED']);
    const answers = await Promise.all(joiners);
    expect(answers.map((answer) => answer.data?.value)).toEqual(['answer 2', 'answer 2']);
    expect(executions).toBe(2);
  });

  it('shares a failure that is the upstream\'s answer (not momentary) with every joiner, executing once', async () => {
    failures = [new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream answered 503', { status: 503 })];
    const leader = run();
    await whenExecuting(1);
    const joiners = [run(), run()];
    await tick();
    gate.open();
    for (const answer of [await leader, ...(await Promise.all(joiners))]) expect(answer.errors?.map((error) => error.extensions.code)).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(executions).toBe(1);
  });

  it('lets a joiner whose own client leaves stop waiting at once, and never gives it the lead', async () => {
    const leaving = new AbortController();
    const joinerLeaving = new AbortController();
    const leader = run(leaving.signal).catch((error: unknown) => error);
    await whenExecuting(1);
    const gone = run(joinerLeaving.signal).catch((error: unknown) => error);
    const staying = run();
    await tick();
    joinerLeaving.abort();
    // It stops waiting and goes its own way (its execution ends at once, its client being gone).
    await gone;
    await whenExecuting(2);
    leaving.abort();
    await leader;
    // The lead goes to the joiner still waiting, not to the one that left.
    await whenExecuting(3);
    gate.open();
    expect((await staying).data?.value).toBe('answer 3');
    expect(executions).toBe(3);
  });
});
