import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { request } from 'undici';
import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';
import type { EmulatorTenant } from '../../tools/emulator';
import { as, freePort, gatewayTenants } from '../helpers/fixtures';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * The supergraph behind Grafbase Gateway, a Rust gateway, run as the real binary:
 * `grafbase dev` from the npm package `grafbase` (its platform package carries the
 * binary, and `dev` composes and serves offline) with router/grafbase.toml, the
 * header rules a deployment uses, and router/grafbase-overrides.toml pointed at the
 * servers started here.
 */

const repoRoot = path.resolve(__dirname, '../..');
const routerDir = path.join(repoRoot, 'router');
const ROUTER_SECRET = 'router-secret-for-the-grafbase-test-0123456789';

const { withShifts: WITH_SHIFTS, other: OTHER, noShifts: NO_SHIFTS } = gatewayTenants();

/**
 * The platform package's binary: where scripts/test.sh installs it (a folder of its own under
 * node_modules/.cache), or in node_modules itself (docs/supergraph.md's `npm install
 * --no-save`); else the link the `grafbase` package's postinstall makes.
 */
function grafbaseBinary(): string {
  const triple = { x64: 'x86_64', arm64: 'aarch64' }[process.arch as 'x64' | 'arm64'];
  const platformPackage = process.platform === 'linux' && triple ? path.join('@grafbase', `cli-${triple}-unknown-linux-musl`, 'grafbase') : undefined;
  const candidates = [
    ...(platformPackage ? [path.join(repoRoot, 'node_modules', '.cache', 'grafbase-cli', 'node_modules', platformPackage), path.join(repoRoot, 'node_modules', platformPackage)] : []),
    path.join(repoRoot, 'node_modules', 'grafbase', 'grafbase'),
  ];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) throw new Error(`no grafbase binary (looked at ${candidates.join(', ')}): run the test line (scripts/test.sh installs it), or docs/supergraph.md's npm install --no-save`);
  return found;
}

interface RunningGrafbase {
  readonly url: string;
  stop(): Promise<void>;
}

/** router/grafbase-overrides.toml with this test's subgraph URLs and absolute schema paths. */
function overridesFor(urls: { wfs: string; people: string }, dir: string): string {
  let text = readFileSync(path.join(routerDir, 'grafbase-overrides.toml'), 'utf8');
  text = text.replace('http://localhost:4001/graphql', urls.wfs).replace('http://localhost:4002/graphql', urls.people);
  text = text.replace(/schema_path = "([^"]+)"/g, (_match, relative: string) => `schema_path = ${JSON.stringify(path.resolve(routerDir, relative))}`);
  const file = path.join(dir, 'grafbase-overrides.toml');
  writeFileSync(file, text);
  return file;
}

async function startGrafbase(urls: { wfs: string; people: string }): Promise<RunningGrafbase> {
  const home = mkdtempSync(path.join(tmpdir(), 'wfs-grafbase-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    grafbaseBinary(),
    ['dev', '--gateway-config', path.join(routerDir, 'grafbase.toml'), '--graph-overrides', overridesFor(urls, home), '--port', String(port)],
    // Its own HOME: no credentials or state of the machine's user are read or written.
    { cwd: home, env: { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1', WFS_ROUTER_SECRET: ROUTER_SECRET }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const listening = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (/Listening on/.test(stripVTControlCharacters(output))) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`grafbase dev exited (${code}) before listening:\n${output}`)));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    rmSync(home, { recursive: true, force: true });
  };
  try {
    await listening;
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `http://127.0.0.1:${port}/graphql`, stop };
}

interface GatewayError {
  message: string;
  path?: Array<string | number>;
  extensions?: { code?: string; upstream_extensions?: { code?: string } };
}

async function run(gateway: RunningGrafbase, query: string, tenant: EmulatorTenant) {
  const response = await request(gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...as(tenant) },
    body: JSON.stringify({ query }),
  });
  return (await response.body.json()) as { data?: Record<string, any> | null; errors?: GatewayError[] };
}

/** Our code as a client behind Grafbase reads it. */
const subgraphCodes = (result: { errors?: GatewayError[] }) => (result.errors ?? []).map((error) => ({ path: error.path, code: error.extensions?.upstream_extensions?.code }));

const ids = (nodes: Array<{ id: string }> | undefined) => nodes?.map((node) => node.id);

describe('supergraph through Grafbase Gateway', () => {
  let subgraph: TestSubgraph;
  let people: RunningPeopleSubgraph;
  let gateway: RunningGrafbase;

  beforeAll(async () => {
    people = await startPeopleSubgraph();
    subgraph = await startTestSubgraph({ tenants: [WITH_SHIFTS, OTHER, NO_SHIFTS] }, { WFS_ROUTER_SECRET: ROUTER_SECRET });
    gateway = await startGrafbase({ wfs: subgraph.server.url, people: people.url });
  });

  afterAll(async () => {
    await gateway?.stop();
    await subgraph?.close();
    await people?.close();
  });

  afterEach(() => subgraph.emulator.clearFaults());

  it('joins our shifts and locations with the people subgraph: Shift.user, Location.manager', async () => {
    const result = await run(
      gateway,
      `{
        locations(first: 3) { nodes { id name headcount manager { name } } }
        shifts(first: 12) { nodes { id location { id name headcount } user { id name role } notes } }
      }`,
      WITH_SHIFTS,
    );
    expect(result.errors).toBeUndefined();
    expect(ids(result.data?.['locations'].nodes)).toEqual(WITH_SHIFTS.locations.slice(0, 3).map((location) => location.id));
    for (const location of result.data?.['locations'].nodes as any[]) expect(location.manager).toEqual({ name: expect.any(String) });
    const shifts = result.data?.['shifts'].nodes as any[];
    expect(ids(shifts)).toEqual(WITH_SHIFTS.shifts.map((shift) => shift.id));
    shifts.forEach((shift, index) => {
      const upstream = WITH_SHIFTS.shifts[index]!;
      expect(shift.location).toEqual({ id: upstream.location, name: expect.any(String), headcount: expect.any(Number) });
      expect(shift.user).toEqual(upstream.user === null ? null : { id: upstream.user, name: expect.any(String), role: expect.any(String) });
    });
    expect(shifts.some((shift) => shift.user !== null)).toBe(true);
  });

  it('forwards x-tenant-id: two tenants asking at once each get their own data', async () => {
    const query = '{ locations(first: 100) { nodes { id } } }';
    const [one, other] = await Promise.all([run(gateway, query, WITH_SHIFTS), run(gateway, query, OTHER)]);
    expect(ids(one.data?.['locations'].nodes)).toEqual(WITH_SHIFTS.locations.map((location) => location.id));
    expect(ids(other.data?.['locations'].nodes)).toEqual(OTHER.locations.map((location) => location.id));
  });

  it('keeps a failing field to itself: FORBIDDEN shifts beside served locations and people, with our code and message', async () => {
    const result = await run(gateway, '{ locations(first: 2) { nodes { name headcount } } shifts(first: 2) { nodes { id } } people(first: 1) { nodes { name } } }', NO_SHIFTS);
    expect(result.data?.['locations'].nodes).toHaveLength(2);
    expect(result.data?.['people'].nodes).toHaveLength(1);
    expect(result.data?.['shifts']).toBeNull();
    expect(subgraphCodes(result)).toEqual([{ path: ['shifts'], code: 'FORBIDDEN' }]);
    expect(result.errors?.[0]?.message).toMatch(/shifts\.read/);
  });

  it('passes an upstream failure through as UPSTREAM_UNAVAILABLE on its field only', async () => {
    subgraph.emulator.injectFault({ endpoint: 'locations', status: 503, times: 2, tenantId: OTHER.tenantId });
    const result = await run(gateway, '{ locations(first: 2) { nodes { id } } people(first: 1) { nodes { name } } }', OTHER);
    expect(result.data?.['locations']).toBeNull();
    expect(result.data?.['people'].nodes).toHaveLength(1);
    expect(subgraphCodes(result)).toEqual([{ path: ['locations'], code: 'UPSTREAM_UNAVAILABLE' }]);
  });

  it('answers BAD_USER_INPUT for a cursor this subgraph did not issue', async () => {
    const result = await run(gateway, '{ locations(first: 1, after: "not-a-cursor") { nodes { id } } }', WITH_SHIFTS);
    expect(result.data?.['locations'] ?? null).toBeNull();
    expect(subgraphCodes(result)).toEqual([{ path: ['locations'], code: 'BAD_USER_INPUT' }]);
  });
});
