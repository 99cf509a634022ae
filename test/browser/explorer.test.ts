import { buildSubgraphSchema } from '@apollo/subgraph';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { graphql, parse } from 'graphql';
import { chromium, type Browser } from 'playwright-core';
import { createExplorer } from '../../src/explorer';

/**
 * The explorer in a real headless Chromium (Debian's `chromium`): the page loads with
 * no request leaving the machine, runs the example query on a click, and shows the
 * data. The screenshot is kept in test/artifacts/explorer.png.
 *
 * The backend is our real schema.graphql executed with graphql-js over a small demo
 * data set, and it answers only when the tenant header is sent, so the test also
 * proves that the pre-filled headers editor is what the request carries.
 */

const repoRoot = path.resolve(__dirname, '../..');
const artifactsDir = path.join(repoRoot, 'test', 'artifacts');
const chromiumPath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const demoTenant = 'tnt_demo_bakery';

const exampleQuery = `# Locations, and the first shifts with where they happen.
query Rota {
  locations(first: 10) {
    nodes { id name }
  }
  shifts(first: 3) {
    nodes { id start end location { name } }
  }
}
`;

const demoLocations = [
  { id: 'loc_001', name: 'Harbour Street Bakery' },
  { id: 'loc_002', name: 'Station Kiosk' },
];
const demoShifts = [
  { id: 'shf_001', start: '2026-11-23T06:00:00+01:00', end: '2026-11-23T14:00:00+01:00', location: demoLocations[0] },
];

const schema = buildSubgraphSchema([
  {
    typeDefs: parse(readFileSync(path.join(repoRoot, 'schema.graphql'), 'utf8')),
    resolvers: {
      Query: {
        locations: (_parent: unknown, _args: unknown, context: { tenant?: string }) => {
          if (context.tenant !== demoTenant) throw new Error('no tenant header');
          return connection(demoLocations);
        },
        shifts: () => connection(demoShifts),
      },
    },
  },
]);

function connection<T>(nodes: T[]) {
  const edges = nodes.map((node, index) => ({ cursor: `c${index}`, node }));
  return { edges, nodes, pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: 'c0', endCursor: `c${nodes.length - 1}` } };
}

async function readJson(req: IncomingMessage): Promise<{ query: string; variables?: Record<string, unknown>; operationName?: string }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function answerGraphQL(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJson(req);
  const tenant = req.headers['x-tenant-id'];
  const result = await graphql({
    schema,
    source: body.query,
    variableValues: body.variables ?? null,
    operationName: body.operationName ?? null,
    contextValue: { tenant: typeof tenant === 'string' ? tenant : undefined },
  });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(result));
}

describe('explorer in a real browser', () => {
  let server: Server;
  let baseUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    const explorer = createExplorer({ graphqlPath: '/graphql', defaultQuery: exampleQuery, defaultHeaders: { 'x-tenant-id': demoTenant } });
    server = createServer((req, res) => {
      if (req.method === 'POST' && req.url === '/graphql') {
        void answerGraphQL(req, res).catch(() => {
          res.writeHead(500);
          res.end();
        });
        return;
      }
      if (explorer(req, res)) return;
      res.writeHead(404);
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('runs the example query on a click and shows the demo data, with no request leaving the machine', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text().slice(0, 300)}`);
    });
    // A string, not a function: this runs in the page, and our tsconfig has no DOM types.
    await page.addInitScript({
      content: `document.addEventListener('securitypolicyviolation', (event) => {
        console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI);
      });`,
    });

    const response = await page.goto(`${baseUrl}/`);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    await expect(page.title()).resolves.toBe('Workforce scheduling subgraph — explorer');

    // The example query and the tenant header are there before anyone types.
    const queryEditor = page.locator('.graphiql-query-editor');
    await queryEditor.getByText('query Rota').waitFor();
    await page.locator('.graphiql-editor-tool').getByText(demoTenant).waitFor();

    await page.getByRole('button', { name: /^Execute query/ }).click();
    const resultPane = page.locator('.result-window');
    await resultPane.getByText('Harbour Street Bakery').first().waitFor();
    const resultText = await resultPane.innerText();
    expect(resultText).toContain('Station Kiosk');
    expect(resultText).toContain('shf_001');
    expect(resultText).not.toContain('"errors"');

    mkdirSync(artifactsDir, { recursive: true });
    await page.screenshot({ path: path.join(artifactsDir, 'explorer.png') });

    // The schema docs (Playground's DOCS tab) come from introspection, under the same CSP.
    await page.getByRole('button', { name: 'Show Documentation Explorer' }).click();
    const docs = page.locator('.graphiql-doc-explorer');
    await docs.getByText('Query', { exact: true }).first().click();
    await docs.getByText('locations', { exact: true }).first().waitFor();
    expect(await docs.innerText()).toContain('LocationConnection');

    const offMachine = requested.filter((url) => {
      const { protocol, hostname } = new URL(url);
      if (protocol === 'data:' || protocol === 'blob:') return false;
      return !['127.0.0.1', 'localhost', '[::1]'].includes(hostname);
    });
    expect(offMachine).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
