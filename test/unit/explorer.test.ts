import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createExplorer, type ExplorerOptions } from '../../src/explorer';
import { EXPLORER_ASSETS_TIMEOUT_MS, explorerAssets } from '../helpers/explorerAssets';

/** The explorer's HTTP side: what it serves, with which headers, and what it leaves alone. */

const NOT_MINE = 418;

let assetsDir: string;
beforeAll(async () => {
  assetsDir = await explorerAssets();
}, EXPLORER_ASSETS_TIMEOUT_MS);

async function startExplorer(options: Partial<ExplorerOptions> = {}): Promise<{ server: Server; base: string }> {
  const explorer = createExplorer({
    graphqlPath: '/graphql',
    defaultQuery: '{ locations { nodes { id } } }',
    defaultHeaders: { 'x-tenant-id': 'tnt_one' },
    assetsDir,
    ...options,
  });
  const server = createServer((req, res) => {
    if (explorer(req, res)) return;
    res.writeHead(NOT_MINE);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** The files the page names: its scripts, stylesheets and icon, and Monaco's workers from its settings. */
function assetUrls(html: string): string[] {
  const workers = Object.values((pageConfig(html)['workers'] ?? {}) as Record<string, string>);
  return [...[...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string), ...workers];
}

/** The JSON settings block the bootstrap script reads. */
function pageConfig(html: string): Record<string, unknown> {
  const match = /<script type="application\/json" id="explorer-config">(.*?)<\/script>/s.exec(html);
  return JSON.parse(match?.[1] ?? 'null');
}

/** A raw request, so that paths reach the server exactly as written (no URL normalisation). */
function rawGet(base: string, rawPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${rawPath}`, { method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.path = rawPath;
    req.on('error', reject);
    req.end();
  });
}

describe('createExplorer', () => {
  let server: Server;
  let base: string;

  beforeEach(async () => {
    ({ server, base } = await startExplorer());
  });

  afterEach(async () => {
    await stop(server);
  });

  it('serves the page at / with a strict Content-Security-Policy', async () => {
    const response = await fetch(`${base}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    // Monaco needs inline styles (style attributes, and its theme's <style> element); scripts stay our own files.
    expect(csp.split('; ').filter((directive) => directive.includes('unsafe'))).toEqual(["style-src 'self' 'unsafe-inline'"]);
    const html = await response.text();
    expect(html).toContain('<title>Workforce scheduling subgraph — explorer</title>');
    expect(html).not.toMatch(/<script>/); // no inline script: only src= scripts and the JSON block
  });

  it('pre-fills the headers editor and the example query', async () => {
    const config = pageConfig(await (await fetch(`${base}/`)).text());
    expect(config).toEqual({
      graphqlPath: '/graphql',
      defaultQuery: '{ locations { nodes { id } } }',
      defaultHeaders: JSON.stringify({ 'x-tenant-id': 'tnt_one' }, null, 2),
      logo: 'Workforce scheduling subgraph — explorer',
      workers: {
        editorWorker: expect.stringMatching(/^\/explorer\/assets\/editor\.worker\.[0-9a-f]{12}\.js$/),
        json: expect.stringMatching(/^\/explorer\/assets\/json\.worker\.[0-9a-f]{12}\.js$/),
        graphql: expect.stringMatching(/^\/explorer\/assets\/graphql\.worker\.[0-9a-f]{12}\.js$/),
      },
    });
  });

  it('serves every asset the page names from this process, cacheable for a year', async () => {
    const html = await (await fetch(`${base}/`)).text();
    const urls = assetUrls(html);
    expect(urls.length).toBe(7);
    for (const url of urls) {
      expect(url.startsWith('/explorer/assets/')).toBe(true);
      const response = await fetch(`${base}${url}`);
      expect({ url, status: response.status }).toEqual({ url, status: 200 });
      expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('content-type')).toMatch(
        url.endsWith('.js') ? /^text\/javascript/ : url.endsWith('.css') ? /^text\/css/ : /^image\/svg\+xml/,
      );
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
  });

  it('serves the bundle of React, GraphiQL and the bootstrap as built, gzipped for clients that accept it', async () => {
    const html = await (await fetch(`${base}/`)).text();
    const graphiqlUrl = assetUrls(html).find((url) => /\/explorer\.[0-9a-f]+\.js$/.test(url)) ?? 'no bundle named';
    const installed = readFileSync(path.join(assetsDir, path.basename(graphiqlUrl)));
    const response = await fetch(`${base}${graphiqlUrl}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(response.headers.get('content-encoding')).toBe('gzip');
    expect(Number(response.headers.get('content-length'))).toBeLessThan(installed.length / 2);
    expect(Buffer.from(await response.arrayBuffer()).equals(installed)).toBe(true); // fetch decompresses
  });

  it('answers 404 for an unknown asset, and for a path that tries to leave the asset folder', async () => {
    expect((await fetch(`${base}/explorer/assets/nope.js`)).status).toBe(404);
    expect(await rawGet(base, '/explorer/assets/../../package.json')).toBe(404);
    expect(await rawGet(base, '/explorer/assets/%2e%2e%2fpackage.json')).toBe(404);
  });

  it('answers HEAD without a body', async () => {
    const response = await fetch(`${base}/`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });

  it('leaves every other request to the caller', async () => {
    expect((await fetch(`${base}/`, { method: 'POST', body: '{}' })).status).toBe(NOT_MINE);
    expect((await fetch(`${base}/graphql`)).status).toBe(NOT_MINE);
    expect((await fetch(`${base}/health`)).status).toBe(NOT_MINE);
    expect((await fetch(`${base}/explorer`)).status).toBe(NOT_MINE);
  });
});

describe('createExplorer with hostile or empty settings', () => {
  it('escapes the title and keeps the settings block from closing its script element', async () => {
    const { server, base } = await startExplorer({
      title: '<img src=x onerror=alert(1)>',
      defaultQuery: '# </script><script>alert(1)</script>\n{ locations { nodes { id } } }',
    });
    try {
      const html = await (await fetch(`${base}/`)).text();
      expect(html).not.toContain('<img src=x');
      expect(html).not.toContain('</script><script>alert(1)');
      expect(pageConfig(html)['defaultQuery']).toBe('# </script><script>alert(1)</script>\n{ locations { nodes { id } } }');
    } finally {
      await stop(server);
    }
  });

  it('leaves the headers editor empty when there are no default headers', async () => {
    const { server, base } = await startExplorer({ defaultHeaders: {} });
    try {
      expect(pageConfig(await (await fetch(`${base}/`)).text())['defaultHeaders']).toBeNull();
    } finally {
      await stop(server);
    }
  });
});

describe('createExplorer without built assets', () => {
  it('answers 500 for the page and its assets, saying the build makes them, and leaves other paths alone', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'wfs-no-assets-'));
    const { server, base } = await startExplorer({ assetsDir: empty });
    try {
      const page = await fetch(`${base}/`);
      expect(page.status).toBe(500);
      expect(await page.text()).toMatch(/npm run build/);
      expect((await fetch(`${base}/explorer/assets/graphiql.0123456789ab.min.js`)).status).toBe(500);
      expect((await fetch(`${base}/health`)).status).toBe(NOT_MINE);
    } finally {
      await stop(server);
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
