import {
  execute,
  getOperationAST,
  parse,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLError,
} from 'graphql';
import { createContext, type ContextServices, type GraphQLContext } from '../../src/graphql/data/context';
import type { CursorCodec, CursorPosition } from '../../src/graphql/data/cursor';
import { badUserInput, graphQLError } from '../../src/graphql/errors';
import { CompiledExecution } from '../../src/graphql/server/execution';
import { createSubgraphSchema } from '../../src/graphql/server/schema';
import type { ListPage, WfsClient } from '../../src/upstream/client';
import { UpstreamError } from '../../src/upstream/errors';
import { EntityIndexes } from '../../src/upstream/reading/entityIndexes';
import { CallBudget } from '../../src/upstream/resilience/callBudget';
import { RESOURCES, ResourceSet, type AnyResource, type UpstreamRecord } from '../../src/upstream/resources';
import { seeded } from '../helpers/seeded';
import { randomDocument, type Generated, type Values } from '../helpers/randomDocument';

/**
 * Compiled execution answers as graphql-js does (src/graphql/server/execution.ts): random
 * documents over `schema.graphql` (response keys selected again and again, fragments
 * spread in several places, inline fragments on objects, interfaces and unions, nested
 * `@skip`/`@include` with literals and variables, `node`, `_entities`, arguments as
 * literals and as variables, invalid cursors and page sizes), each run twice after
 * parsing and validation, as Apollo Server runs it: through CompiledExecution's executor
 * compiling at the first run (a document outside the compiled subset, or whose compiled
 * answer has errors, is answered by graphql-js), and through graphql-js's `execute`.
 * Data (key order included) and errors (message, locations, path, extensions, and the
 * class and message of what was thrown) must be identical. About half the documents
 * are written for the compiled subset (no directives, a key with a selection once).
 *
 * The data comes from the real resolvers, loaders, connections and entity index over an
 * in-process upstream (a fake WfsClient) that answers errors (unavailable, forbidden, a
 * bad response, no tenant) and nulls (missing references, records that break a non-null
 * field or a scalar, an item skipped), by tenant, so every answer is deterministic.
 *
 * The test line runs one fixed seed. More: `DIFF_SEEDS=20 npx jest compiledDifferential`
 * runs seeds 1 to 20; `DIFF_SEED=n` replays one (a difference names its seed);
 * `DIFF_REPORT=1` prints what each seed generated.
 */

const FIXED_SEED = 20261127;
const DOCUMENTS_PER_SEED = 1200;
const seeds = process.env.DIFF_SEED
  ? [Number(process.env.DIFF_SEED)]
  : process.env.DIFF_SEEDS
    ? Array.from({ length: Number(process.env.DIFF_SEEDS) }, (_, i) => i + 1)
    : [FIXED_SEED];

// The upstream's data: six locations (one that breaks Location.name, one whose name is
// no string), forty shifts with missing and unreadable times, references to locations
// that do not exist, users and open shifts.
const LOCATION_IDS = ['loc_1', 'loc_2', 'loc_3', 'loc_4', 'loc_null_name', 'loc_odd_name'];
const SHIFT_IDS = Array.from({ length: 40 }, (_, i) => `sh_${i + 1}`);

function rawLocation(id: string): unknown {
  if (id === 'loc_null_name') return { id, name: null };
  if (id === 'loc_odd_name') return { id, name: { first: 'odd' } };
  return { id, name: `Location ${id}` };
}

function rawShift(id: string, i: number): unknown {
  const day = String(1 + (i % 28)).padStart(2, '0');
  return {
    id,
    start: i % 9 === 4 ? null : i % 11 === 6 ? 'not a date' : `2026-11-${day}T09:00:00+01:00`,
    end: i % 7 === 3 ? null : `2026-11-${day}T17:00:00+01:00`,
    location: i % 13 === 5 ? 'loc_gone' : LOCATION_IDS[i % LOCATION_IDS.length],
    user: i % 3 === 0 ? null : `user_${i % 5}`,
  };
}

/** Records as the upstream client hands them on; the two odd locations skip the mapper, as a mapper bug would. */
function records(resource: AnyResource): ReadonlyArray<UpstreamRecord> {
  if (resource.name === 'locations') return LOCATION_IDS.map((id) => (id === 'loc_null_name' || id === 'loc_odd_name' ? rawLocation(id) : resource.map(rawLocation(id))) as UpstreamRecord);
  const shifts = SHIFT_IDS.map((id, i) => resource.map(rawShift(id, i)) as UpstreamRecord);
  // An item without an id: skipped, with an error for it beside the answer's own (the context's item errors).
  shifts.splice(7, 0, resource.map({ start: '2026-11-08T09:00:00+01:00' }) as UpstreamRecord);
  return shifts;
}

/** The tenants: one served, and one each whose shifts are unavailable, whose locations come back unreadable, or who may not read shifts. */
const TENANTS = ['ok', 'ok', 'ok', 'ok', 'shifts-down', 'locations-bad', 'no-shifts-scope', ''] as const;

const fakeClient = {
  budgetFor: (signal: AbortSignal) => new CallBudget(1_000, signal),
  async authorize(tenantId: string, resource: AnyResource): Promise<void> {
    if (resource.scope && tenantId === 'no-shifts-scope') throw new UpstreamError('FORBIDDEN', `reading ${resource.name} needs the scope "${resource.scope}"`);
  },
  async listPage(tenantId: string, resource: AnyResource, options: { ref?: string | null; pageSize?: number }): Promise<ListPage<UpstreamRecord>> {
    await fakeClient.authorize(tenantId, resource);
    if (tenantId === 'shifts-down' && resource.name === 'shifts') throw new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream answered 503 for shifts');
    if (tenantId === 'locations-bad' && resource.name === 'locations') throw new UpstreamError('UPSTREAM_BAD_RESPONSE', 'the locations response is not a list envelope');
    const pageSize = options.pageSize ?? 100;
    const offset = options.ref ? Number(options.ref) : 0;
    const all = records(resource);
    const items = all.slice(offset, offset + pageSize);
    const hasMore = offset + pageSize < all.length;
    return { ref: options.ref ?? null, pageSize, items, hasMore, next: hasMore ? String(offset + pageSize) : null, previous: offset > 0 ? String(Math.max(0, offset - pageSize)) : null };
  },
};

/** Cursors without the real codec's random nonce, so that both answers carry the same ones. */
const plainCursors = {
  encode: (tenantId: string, list: string, position: CursorPosition, scope = '') => Buffer.from(JSON.stringify([tenantId, list, scope, position])).toString('base64url'),
  decode(cursor: string, tenantId: string, list: string, argument: 'after' | 'before', scope = ''): CursorPosition {
    try {
      const [t, l, s, position] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string, string, CursorPosition];
      if (t === tenantId && l === list && s === scope && typeof position === 'object' && position !== null) return position;
    } catch {
      // not one of ours: refused below
    }
    throw badUserInput(`"${argument}" is not a cursor issued by this server for ${list} of this tenant`);
  },
} as unknown as CursorCodec;

/** A fresh context over fresh indexes for every request, so that the two runs of a document see the same upstream. */
function contextFor(tenant: string): GraphQLContext {
  const services: ContextServices = {
    client: fakeClient as unknown as WfsClient,
    indexes: new EntityIndexes({ sweepEveryMs: 0 }),
    cursors: plainCursors,
    resources: new ResourceSet(RESOURCES),
    identify: async () => {
      if (!tenant) throw graphQLError('UNAUTHENTICATED', 'send an Authorization: Bearer token that names your tenant');
      return tenant;
    },
  };
  return createContext(services, {}, new AbortController().signal);
}


type Answer = Record<string, unknown>;

/**
 * An answer as compared: all of it, in its order, but its errors sorted. graphql-js
 * records errors as the fields fail, in the order upstream reads settle, which the
 * document does not decide: the graphql-js run that answers after a compiled run ended
 * in errors (execution.ts) reads the same request's settled pages, and lists the same
 * errors in another order.
 */
function comparable(answer: Answer): string {
  const errors = answer['errors'] as unknown[] | undefined;
  return JSON.stringify(errors ? { ...answer, errors: errors.map((error) => JSON.stringify(error)).sort() } : answer);
}

/**
 * One document run as Apollo Server runs it once it is parsed and validated: through the
 * executor it was given (the compiled one, or graphql-js's `execute`), then the context's
 * item errors appended (plugins.ts, `itemErrors`). Each error is compared whole: message,
 * locations, path, extensions and the class and message of what was thrown.
 */
async function answer(run: 'compiled' | 'graphql-js', document: DocumentNode, { variables, tenant }: Generated): Promise<Answer> {
  const context = contextFor(tenant);
  const operation = getOperationAST(document)!;
  const result: ExecutionResult =
    run === 'compiled'
      ? await execution.executor({ document, operation, request: { variables }, context } as never)
      : await execute({ schema: reference, document, variableValues: variables, contextValue: context });
  const errors = [...(result.errors ?? []), ...context.itemErrors].map(described);
  return { ...(errors.length > 0 && { errors }), data: result.data };
}

function described(error: GraphQLError): unknown {
  const original = error.originalError;
  return { ...error.toJSON(), thrown: original ? `${original.constructor.name}: ${original.message}` : null };
}

const schema = createSubgraphSchema();
const reference = createSubgraphSchema();
let execution: CompiledExecution;
let values: Values;

beforeAll(async () => {
  execution = new CompiledExecution(createSubgraphSchema(), createSubgraphSchema, { compileAfter: 0 });
  // Real cursors of the served tenant, for `after` and `before`.
  const pages = await answer('graphql-js', parse('{ locations(first: 2) { pageInfo { startCursor endCursor } } shifts(first: 3) { edges { cursor } } }'), { query: '', variables: {}, tenant: 'ok' });
  const data = pages['data'] as { locations: { pageInfo: { startCursor: string; endCursor: string } }; shifts: { edges: Array<{ cursor: string }> } };
  values = { cursors: [data.locations.pageInfo.startCursor, data.locations.pageInfo.endCursor, ...data.shifts.edges.map((edge) => edge.cursor)] };
});

it.each(seeds)('seed %i: every generated document is answered alike compiled and by graphql-js', async (seed) => {
  const random = seeded(seed);
  const differences: string[] = [];
  const tally = { documents: 0, invalid: 0, compiled: 0, fallback: 0, withErrors: 0 };
  for (let i = 0; i < DOCUMENTS_PER_SEED; i++) {
    const generated = randomDocument(schema, random, values, { locationIds: LOCATION_IDS, shiftIds: SHIFT_IDS, tenants: TENANTS });
    tally.documents++;
    const document = parse(generated.query);
    const invalid = validate(schema, document);
    if (invalid.length > 0) {
      tally.invalid++;
      continue;
    }
    const before = execution.compiledRuns;
    const fast = await answer('compiled', document, generated);
    const plain = await answer('graphql-js', document, generated);
    if (execution.compiledRuns > before) tally.compiled++;
    else tally.fallback++;
    if (plain['errors']) tally.withErrors++;
    const [a, b] = [comparable(fast), comparable(plain)];
    if (a !== b) differences.push(`seed ${seed}, document ${i} (DIFF_SEED=${seed}), tenant "${generated.tenant}":\n${generated.query}\nvariables ${JSON.stringify(generated.variables)}\ncompiled:   ${a}\ngraphql-js: ${b}`);
  }
  // `DIFF_REPORT=1`: what the seed generated, and how many differences it found.
  if (process.env.DIFF_REPORT) process.stdout.write(`seed ${seed}: ${JSON.stringify(tally)}, ${differences.length} differences\n`);
  expect(differences.slice(0, 3)).toEqual([]);
  // The generator reaches both paths, and mostly valid documents (an invalid one is refused before execution, alike).
  expect(tally.invalid).toBeLessThan(tally.documents * 0.3);
  expect(tally.compiled).toBeGreaterThan(tally.documents * 0.1);
  expect(tally.fallback).toBeGreaterThan(tally.documents * 0.2);
  expect(tally.withErrors).toBeGreaterThan(tally.documents * 0.1);
}, 180_000);
