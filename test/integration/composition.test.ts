import { composeServices, type CompositionResult } from '@apollo/composition';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Kind, buildSchema, parse, print, printSchema, validate, type ConstDirectiveNode, type GraphQLInterfaceType, type GraphQLSchema } from 'graphql';
import { parse as parseYaml } from 'yaml';
import { KNOWN_ENV_VARIABLES, loadConfig } from '../../src/config';
import { DEFAULT_PAGE_SIZE } from '../../src/graphql/data/connections';
import { DEFAULT_QUERY_LIMITS } from '../../src/graphql/admission/limits';
import { IDENTITY_VARIABLES, identitySettings } from '../../router/hiveResponseCache';

/**
 * Our schema must compose with the subgraphs around it the way every real supergraph
 * does: another subgraph owns `User`, adds fields to `Location` and `Shift`, and has
 * its own `PageInfo`. The example people subgraph stands in for them.
 */

const repoRoot = path.resolve(__dirname, '../..');
const supergraphConfigPath = path.join(repoRoot, 'router', 'supergraph.yaml');
const node = path.join(repoRoot, 'node_modules', '.bin', 'node');

/**
 * Hint codes a careful platform team would not act on, each with the reason. Empty
 * today: the example composes without a single hint. Hints such as
 * INCONSISTENT_DESCRIPTION or INCONSISTENT_BUT_COMPATIBLE_FIELD_TYPE mean two teams
 * disagree about a shared type and stay failures here.
 */
const benignHintCodes: ReadonlyMap<string, string> = new Map();

interface SupergraphConfig {
  federation_version: string;
  subgraphs: Record<string, { routing_url: string; schema: { file: string } }>;
}

function readSupergraphConfig(): SupergraphConfig {
  return parseYaml(readFileSync(supergraphConfigPath, 'utf8')) as SupergraphConfig;
}

function composeFromConfig(): CompositionResult {
  const { subgraphs } = readSupergraphConfig();
  return composeServices(
    Object.entries(subgraphs).map(([name, subgraph]) => ({
      name,
      url: subgraph.routing_url,
      typeDefs: parse(readFileSync(path.resolve(path.dirname(supergraphConfigPath), subgraph.schema.file), 'utf8')),
    })),
  );
}

/** What one run of a script showed: its exit code and its output. */
interface ScriptRun {
  status: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs scripts/compose.mts once per argument list, as `npm run compose` would, all in one
 * Node process (test/helpers/scriptRuns.mts: each run imports the script afresh, with its
 * own argv, and reports its own exit code and output), which loads @apollo/composition
 * once instead of once per run.
 */
function runComposeScript(argumentLists: string[][]): ScriptRun[] {
  const run = spawnSync(node, [path.join(repoRoot, 'test', 'helpers', 'scriptRuns.mts'), path.join(repoRoot, 'scripts', 'compose.mts'), JSON.stringify(argumentLists)], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`test/helpers/scriptRuns.mts exited with ${run.status}: ${run.stderr}`);
  return JSON.parse(run.stdout) as ScriptRun[];
}

describe('supergraph composition', () => {
  const result = composeFromConfig();

  it('composes our subgraph with the example people subgraph without errors', () => {
    expect(result.errors?.map((error) => error.message)).toBeUndefined();
  });

  it('produces no composition hints of concern', () => {
    const ofConcern = (result.hints ?? [])
      .filter((hint) => !benignHintCodes.has(hint.definition.code))
      .map((hint) => `${hint.definition.code}: ${hint.message}`);
    expect(ofConcern).toEqual([]);
  });

  it('gives clients the people fields on our entities and our fields on theirs', () => {
    const api = apiSchema(result);
    const fieldsOf = (type: string) => Object.keys((api.getType(type) as { getFields(): object }).getFields());
    expect(fieldsOf('Location')).toEqual(expect.arrayContaining(['id', 'name', 'headcount', 'manager']));
    expect(fieldsOf('Shift')).toEqual(expect.arrayContaining(['start', 'end', 'location', 'user', 'notes']));
    expect(fieldsOf('User')).toEqual(expect.arrayContaining(['id', 'name', 'role']));
    expect(fieldsOf('PageInfo')).toEqual(['hasNextPage', 'hasPreviousPage', 'startCursor', 'endCursor']);
  });

  it('validates every frontend operation against the supergraph API schema', () => {
    const api = apiSchema(result);
    const dir = path.join(repoRoot, 'operations');
    const files = readdirSync(dir).filter((file) => file.endsWith('.graphql'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const errors = validate(api, parse(readFileSync(path.join(dir, file), 'utf8')));
      expect({ file, errors: errors.map((error) => error.message) }).toEqual({ file, errors: [] });
    }
  });

  it('keeps the committed supergraph.graphql equal to a fresh composition', () => {
    const committed = readFileSync(path.join(repoRoot, 'supergraph.graphql'), 'utf8');
    // A failure here means: run `npm run compose` and commit supergraph.graphql.
    expect(committed === result.supergraphSdl).toBe(true);
  });

  it('keeps the committed client-facing supergraph.api.graphql equal to the fresh API schema, federation-free', () => {
    const committed = readFileSync(path.join(repoRoot, 'supergraph.api.graphql'), 'utf8');
    // A failure here means: run `npm run compose` and commit supergraph.api.graphql.
    expect(committed.endsWith(printSchema(apiSchema(result)) + '\n')).toBe(true);
    const committedSchema = buildSchema(committed);
    expect(committedSchema.getQueryType()?.getFields()['_entities']).toBeUndefined();
    expect(committedSchema.getQueryType()?.getFields()['_service']).toBeUndefined();
    expect(committed).not.toMatch(/@key|@link|join__|link__|@shareable/);
    // relay-compiler reads it: no schema extensions, and global object identification is there.
    expect(committed).not.toMatch(/^extend /m);
    expect(committedSchema.getQueryType()?.getFields()['node']?.args.map((arg) => arg.name)).toEqual(['nodeId']);
    expect(committedSchema.getPossibleTypes(committedSchema.getType('Node') as GraphQLInterfaceType).map((type) => type.name).sort()).toEqual(['Location', 'Shift']);
  });

  it("keeps schema.graphql's cost directives in the supergraph, where a router's demand control reads them", () => {
    const ours = costDirectives(readFileSync(path.join(repoRoot, 'schema.graphql'), 'utf8'));
    expect([...ours.keys()]).toEqual(expect.arrayContaining(['Query.locations', 'Query.shifts', 'Location.shifts', 'Query.shifts(filter:)', 'Shift.start', 'PageInfo.endCursor']));
    const composed = costDirectives(result.supergraphSdl ?? '');
    for (const [coordinate, directives] of ours) expect({ coordinate, directives: composed.get(coordinate) }).toEqual({ coordinate, directives });
    expect(result.supergraphSdl).toContain('@link(url: "https://specs.apollo.dev/cost/v0.1"');
  });

  it('pins the same federation version in supergraph.yaml that npm run compose uses', () => {
    const installed = (require('@apollo/composition/package.json') as { version: string }).version;
    expect(readSupergraphConfig().federation_version).toBe(`=${installed}`);
  });
});

describe('npm run compose (scripts/compose.mts)', () => {
  /** Each run's own folder, set up before the runs. */
  const workDirs = { writes: '', check: '', fails: '' };
  let runs: Record<keyof typeof workDirs, ScriptRun>;

  beforeAll(() => {
    for (const name of ['writes', 'check', 'fails'] as const) workDirs[name] = mkdtempSync(path.join(tmpdir(), `wfs-compose-${name}-`));
    // --check: a supergraph.graphql as committed beside a stale supergraph.api.graphql.
    writeFileSync(path.join(workDirs.check, 'supergraph.graphql'), readFileSync(path.join(repoRoot, 'supergraph.graphql'), 'utf8'));
    writeFileSync(path.join(workDirs.check, 'supergraph.api.graphql'), 'type Query { stale: Int }\n');
    // A people subgraph whose PageInfo lacks endCursor: the router could not answer
    // `people { pageInfo { endCursor } }`, so composition must refuse it.
    const people = readFileSync(path.join(repoRoot, 'examples', 'people-subgraph', 'schema.graphql'), 'utf8');
    writeFileSync(path.join(workDirs.fails, 'people.graphql'), people.replace(/^\s*endCursor: String\n/m, ''));
    writeFileSync(
      path.join(workDirs.fails, 'supergraph.yaml'),
      [
        'subgraphs:',
        '  wfs:',
        '    routing_url: http://localhost:4001/graphql',
        `    schema: { file: ${JSON.stringify(path.join(repoRoot, 'schema.graphql'))} }`,
        '  people:',
        '    routing_url: http://localhost:4002/graphql',
        '    schema: { file: people.graphql }',
      ].join('\n'),
    );
    const [writes, check, fails] = runComposeScript([
      ['--out', path.join(workDirs.writes, 'supergraph.graphql')],
      ['--out', path.join(workDirs.check, 'supergraph.graphql'), '--check'],
      ['--config', path.join(workDirs.fails, 'supergraph.yaml'), '--out', path.join(workDirs.fails, 'supergraph.graphql')],
    ]);
    runs = { writes: writes!, check: check!, fails: fails! };
  });

  afterAll(() => {
    for (const dir of Object.values(workDirs)) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes the supergraph and reports no hints', () => {
    const workDir = workDirs.writes;
    const run = runs.writes;
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    expect(run.stdout).toContain('Composed wfs, people');
    expect(readFileSync(path.join(workDir, 'supergraph.graphql'), 'utf8')).toBe(readFileSync(path.join(repoRoot, 'supergraph.graphql'), 'utf8'));
    expect(readFileSync(path.join(workDir, 'supergraph.api.graphql'), 'utf8')).toBe(readFileSync(path.join(repoRoot, 'supergraph.api.graphql'), 'utf8'));
    // A failure here means: run `npm run compose` and commit schema.api.graphql.
    expect(readFileSync(path.join(workDir, 'schema.api.graphql'), 'utf8')).toBe(readFileSync(path.join(repoRoot, 'schema.api.graphql'), 'utf8'));
  });

  it('--check fails, naming the file, when the client-facing schema is stale', () => {
    const run = runs.check;
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('supergraph.api.graphql is out of date');
    expect(run.stderr).not.toContain('supergraph.graphql is out of date');
  });

  it('fails with the composition errors, and writes nothing, when the subgraphs do not compose', () => {
    const run = runs.fails;
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('Composition failed');
    expect(run.stderr).toContain('SATISFIABILITY_ERROR');
    expect(run.stderr).toContain('PageInfo.endCursor');
    expect(existsSync(path.join(workDirs.fails, 'supergraph.graphql'))).toBe(false);
  });
});

describe('router/router.yaml', () => {
  const router = parseYaml(readFileSync(path.join(repoRoot, 'router', 'router.yaml'), 'utf8')) as {
    headers: {
      all: { request: Record<string, Record<string, string>>[] };
      subgraphs: Record<string, { request: Record<string, Record<string, string>>[] }>;
    };
    traffic_shaping: { subgraphs: Record<string, unknown> };
    demand_control: { enabled: boolean; mode: string; strategy: { static_estimated: { list_size: number; max: number } } };
    response_cache: {
      enabled: unknown;
      subgraph: {
        all: { enabled: boolean; ttl: string; redis: { urls: string[] }; invalidation: { enabled: boolean; shared_key: string } };
        subgraphs: Record<string, { private_id?: string }>;
      };
      invalidation: { listen: string; path: string };
    };
    rhai: { scripts: string; main: string };
  };
  const subgraphNames = Object.keys(readSupergraphConfig().subgraphs);

  it('names only subgraphs that supergraph.yaml defines', () => {
    for (const name of [...Object.keys(router.headers.subgraphs), ...Object.keys(router.traffic_shaping.subgraphs), ...Object.keys(router.response_cache.subgraph.subgraphs)]) {
      expect(subgraphNames).toContain(name);
    }
  });

  it("propagates the tenant header the subgraph's WFS_TENANT_HEADER names (its default else) and Authorization to every subgraph", () => {
    const propagated = router.headers.all.request.map((rule) => rule['propagate']?.['named']);
    const { name, default: fallback } = IDENTITY_VARIABLES.tenantHeader;
    expect(propagated).toEqual(expect.arrayContaining([`\${env.${name}:-${fallback}}`, 'authorization']));
  });

  it('sends the router secret, from the environment, to our subgraph only', () => {
    expect(router.headers.subgraphs['wfs']?.request).toContainEqual({
      insert: { name: 'router-authorization', value: '${env.WFS_ROUTER_SECRET}' },
    });
    expect(JSON.stringify(router.headers.all)).not.toContain('router-authorization');
  });

  /**
   * The response cache as Apollo Router's docs name its keys (Router 2.10+, "Response
   * Cache Customization" and "Invalidation"; docs/caching.md): `private_id` for `wfs` is
   * what lets the router store our `private` answers at all, apart per company; main.rhai
   * must put the company under that very context key.
   */
  it("sets up the response cache: private_id for wfs, main.rhai filling that key, the invalidation listener and its key from the environment", () => {
    const cache = router.response_cache;
    // Off unless the operator turns it on (it needs Redis and a GraphOS plan).
    expect(cache.enabled).toBe('${env.ROUTER_RESPONSE_CACHE:-false}');
    expect(cache.subgraph.all).toMatchObject({ enabled: true, invalidation: { enabled: true } });
    expect(cache.subgraph.all.ttl).toMatch(/^\d+s$/);
    expect(cache.subgraph.all.redis.urls).toHaveLength(1);
    // The subgraph's variable, with no default: the router refuses to start without it.
    expect(cache.subgraph.all.invalidation.shared_key).toBe('${env.WFS_CACHE_INVALIDATION_KEY}');
    expect(KNOWN_ENV_VARIABLES).toContain('WFS_CACHE_INVALIDATION_KEY');
    expect(cache.invalidation.path).toBe('/invalidation');
    expect(cache.invalidation.listen).toMatch(/^\$\{env\.[A-Z_]+:-127\.0\.0\.1:\d+\}$/);
    const privateId = cache.subgraph.subgraphs['wfs']?.private_id;
    expect(privateId).toEqual(expect.stringMatching(/^\w+$/));

    // main.rhai, where the router reads it from the repository's root (rhai.scripts' default).
    expect(router.rhai).toEqual({ scripts: '${env.ROUTER_RHAI_DIR:-./router}', main: 'main.rhai' });
    const rhai = readFileSync(path.join(repoRoot, 'router', router.rhai.main), 'utf8');
    const code = rhai.replace(/\/\/.*$/gm, '');
    // Balanced, and the supergraph stage's hook, as Rhai scripts of the router define it.
    for (const [open, close] of [['{', '}'], ['(', ')'], ['[', ']']] as const) expect(code.split(open).length).toBe(code.split(close).length);
    expect(code).toMatch(/^fn supergraph_service\(service\) \{$/m);
    expect(code).toContain('service.map_request(');
    // The company, under the key private_id names, from the verified claim the subgraph
    // reads (its WFS_TENANT_CLAIM default) or the two headers it decides from.
    const assigned = [...code.matchAll(/request\.context\["(\w+)"\] =/g)].map((match) => match[1]);
    expect(assigned.length).toBeGreaterThan(0);
    expect(new Set(assigned)).toEqual(new Set([privateId]));
    expect(code).toContain('Router.APOLLO_AUTHENTICATION_JWT_CLAIMS');
    // The subgraph's identity settings, read from its variables with its defaults, as the
    // Hive plugin reads them (the other gateway's keys: test/e2e/hive-gateway.test.ts).
    const read = [...code.matchAll(/setting\("(\w+)", "([^"]*)"\)/g)].map((match) => [match[1], match[2]]);
    expect(read.sort()).toEqual(Object.values(IDENTITY_VARIABLES).map((variable) => [variable.name, variable.default]).sort());
    expect(code).toMatch(/^fn setting\(name, \w+\) \{$/m);
    // No name Rhai reserves (its book, "Keywords": they cannot name a function, a parameter
    // or a variable, even unused), since no test here can run the script.
    const reserved = ['var', 'static', 'shared', 'goto', 'match', 'case', 'public', 'protected', 'new', 'use', 'with', 'module', 'package', 'super', 'spawn', 'thread', 'go', 'sync', 'async', 'await', 'yield', 'default', 'void', 'null', 'nil'];
    const named = [...code.matchAll(/\bfn (\w+)\(([^)]*)\)|\blet (\w+)|\|(\w+)\|/g)].flatMap((match) => [match[1], ...(match[2]?.split(',') ?? []), match[3], match[4]]).map((name) => name?.trim()).filter(Boolean);
    expect(named).toEqual(expect.arrayContaining(['setting', 'name', 'company', 'request']));
    expect(named.filter((name) => reserved.includes(name!))).toEqual([]);
    expect(code).toContain('env::get(name)');
    expect(code).toContain('claims[tenant_claim]');
    expect(code).toContain('header(request, "authorization")');
    expect(code).toContain('header(request, tenant_header)');
  });

  it("reads the subgraph's identity settings with the subgraph's defaults (Hive's plugin and main.rhai alike)", () => {
    for (const variable of Object.values(IDENTITY_VARIABLES)) expect(KNOWN_ENV_VARIABLES).toContain(variable.name);
    // Verified-identity mode needs an upstream: one company in a tenants file of its own.
    const dir = mkdtempSync(path.join(tmpdir(), 'wfs-identity-'));
    const tenantsFile = path.join(dir, 'tenants.json');
    writeFileSync(tenantsFile, JSON.stringify([{ tenantId: 't1', clientId: 'c1', clientSecret: 's1', scope: 'shifts.read' }]));
    const jwt = { WFS_AUTH_URL: 'https://id.example.com', WFS_TENANTS_FILE: tenantsFile, WFS_JWKS_URL: 'https://id.example.com/jwks.json', WFS_JWT_ISSUER: 'issuer', WFS_JWT_AUDIENCE: 'audience' };
    expect(identitySettings({})).toEqual({ tenantHeader: loadConfig({}).tenantHeader, tenantClaim: loadConfig(jwt).jwt!.tenantClaim, verified: false });
    const renamed = { WFS_TENANT_HEADER: ' X-Company ', WFS_TENANT_CLAIM: 'org' };
    expect(identitySettings({ ...jwt, ...renamed })).toEqual({ tenantHeader: loadConfig({ ...jwt, ...renamed }).tenantHeader, tenantClaim: loadConfig({ ...jwt, ...renamed }).jwt!.tenantClaim, verified: true });
    expect(identitySettings(renamed).tenantHeader).toBe('x-company');
    rmSync(dir, { recursive: true, force: true });
  });

  it("enforces demand control with the subgraph's default cost budget, assuming our default page size", () => {
    expect(router.demand_control).toMatchObject({ enabled: true, mode: 'enforce' });
    expect(router.demand_control.strategy.static_estimated).toEqual({ max: DEFAULT_QUERY_LIMITS.maxCost, list_size: DEFAULT_PAGE_SIZE });
    expect(loadConfig({}).limits.query.maxCost).toBe(DEFAULT_QUERY_LIMITS.maxCost);
  });
});

/** `Type.field` and `Type.field(arg:)` → their @cost and @listSize, as printed. */
function costDirectives(sdl: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const note = (coordinate: string, directives: readonly ConstDirectiveNode[] | undefined) => {
    const printed = (directives ?? []).filter((directive) => ['cost', 'listSize'].includes(directive.name.value)).map((directive) => print(directive));
    if (printed.length > 0) found.set(coordinate, printed);
  };
  for (const definition of parse(sdl).definitions) {
    if (definition.kind !== Kind.OBJECT_TYPE_DEFINITION && definition.kind !== Kind.OBJECT_TYPE_EXTENSION) continue;
    for (const field of definition.fields ?? []) {
      note(`${definition.name.value}.${field.name.value}`, field.directives);
      for (const arg of field.arguments ?? []) note(`${definition.name.value}.${field.name.value}(${arg.name.value}:)`, arg.directives);
    }
  }
  return found;
}

function apiSchema(result: CompositionResult): GraphQLSchema {
  if (!result.schema) throw new Error('composition failed');
  return result.schema.toAPISchema().toGraphQLJSSchema();
}
