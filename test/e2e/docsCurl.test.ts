import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';
import { loadConfig } from '../../src/config';
import { startDemo, type Demo } from '../../src/demo';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { HIVE_ROUTER_SECRET, startHiveGateway, type RunningGateway } from '../helpers/hiveGateway';
import { readDoc, section, shellBlocks, shellCommands } from '../helpers/markdown';

/**
 * The curl lines of the manual, pasted into a shell as written: the README's against the
 * demo (`npm start`), and the Hive Gateway walkthrough's (docs/supergraph.md) against Hive
 * Gateway with the committed router/gateway.config.ts in front of the demo subgraph (with
 * the router secret, as step 1 starts it) and the people subgraph. Only the host and
 * port change (every server here listens on port 0), and the walkthrough's
 * `<demo tenant id>` becomes the demo's first company, as its text tells the reader.
 */

const run = promisify(execFile);

/** The curl commands of some markdown. */
const curls = (markdown: string) => shellBlocks(markdown).flatMap(shellCommands).filter((command) => command.startsWith('curl '));

/** Runs one command line in bash (curl is installed); its stdout parsed as JSON. */
async function pasted(command: string): Promise<{ data?: Record<string, any> | null; errors?: unknown[] }> {
  const { stdout } = await run('bash', ['-c', command], { timeout: 20_000 });
  return JSON.parse(stdout) as { data?: Record<string, any> | null; errors?: unknown[] };
}

const quiet = () => createLogger('warn', new Writable({ write: (_chunk, _encoding, callback) => callback() }));

async function startDemoServer(env: Record<string, string>): Promise<{ demo: Demo; server: RunningServer }> {
  const demo = await startDemo(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env }), env);
  try {
    const server = await startServer(demo.config, { logger: quiet(), defaultTenant: demo.defaultTenant });
    return { demo, server };
  } catch (error) {
    await demo.emulator.close();
    throw error;
  }
}

describe("the README's curl lines, against the demo", () => {
  let demo: Demo;
  let server: RunningServer;
  beforeAll(async () => ({ demo, server } = await startDemoServer({})));
  afterAll(async () => {
    await server?.close();
    await demo?.emulator.close();
  });

  const lines = curls(readDoc('README.md'));

  it('finds them, each aimed at the demo at localhost:4001/graphql', () => {
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const line of lines) expect(line).toContain('http://localhost:4001/graphql');
  });

  it('answers each with data and no error', async () => {
    const origin = new URL(server.url).origin;
    for (const line of lines) {
      const answer = await pasted(line.replaceAll('http://localhost:4001', origin));
      expect({ line, errors: answer.errors }).toEqual({ line, errors: undefined });
      // The README's tenant id is a demo company's: the answer is its data, not the default's.
      expect(answer.data?.['locations']?.nodes?.length).toBeGreaterThan(0);
    }
  });
});

describe("the Hive Gateway walkthrough's curl (docs/supergraph.md), against Hive Gateway", () => {
  let demo: Demo;
  let server: RunningServer;
  let people: RunningPeopleSubgraph;
  let gateway: RunningGateway;
  beforeAll(async () => {
    ({ demo, server } = await startDemoServer({ WFS_ROUTER_SECRET: HIVE_ROUTER_SECRET }));
    people = await startPeopleSubgraph();
    gateway = await startHiveGateway({ wfs: server.url, people: people.url }, HIVE_ROUTER_SECRET);
  });
  afterAll(async () => {
    await gateway?.close();
    await people?.close();
    await server?.close();
    await demo?.emulator.close();
  });

  const lines = curls(section(readDoc('docs/supergraph.md'), 'Hive Gateway'));

  it('is one curl line, aimed at the gateway started with -p 4000', () => {
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('http://127.0.0.1:4000/');
  });

  it('answers with fields of both subgraphs and no error, at the path the walkthrough gives', async () => {
    const origin = new URL(gateway.url).origin;
    const answer = await pasted(lines[0]!.replaceAll('http://127.0.0.1:4000', origin).replaceAll('<demo tenant id>', demo.defaultTenant));
    expect(answer.errors).toBeUndefined();
    const locations = answer.data?.['locations']?.nodes as Array<{ name: string; headcount: number | null }>;
    expect(locations.length).toBeGreaterThan(0);
    // headcount comes from the people subgraph, name from ours: the gateway joined them.
    for (const location of locations) expect(location).toEqual(expect.objectContaining({ name: expect.any(String), headcount: expect.any(Number) }));
    const shifts = answer.data?.['shifts']?.nodes as Array<{ user: { id: string; name: string | null } | null }>;
    expect(shifts.length).toBeGreaterThan(0);
  });

  it("(the router's path, /, is not Hive Gateway's: there it answers 404)", async () => {
    const response = await fetch(`${new URL(gateway.url).origin}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
    expect(response.status).toBe(404);
  });
});
