import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { chromium, type Browser } from 'playwright-core';
import { loadConfig } from '../../src/config';
import { startDemo, type Demo } from '../../src/demo';
import { createLogger } from '../../src/observability/logger';
import { EXAMPLE_QUERY, startServer, type RunningServer } from '../../src/server';
import { EXPLORER_ASSETS_TIMEOUT_MS, explorerAssets } from '../helpers/explorerAssets';
import { editShiftEnd } from '../helpers/relayLive';
import { livePolls } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * The explorer in a real headless Chromium (Debian's `chromium`), on the real server
 * in demo mode, started the way src/index.ts starts it: the page loads with no request
 * leaving the machine, runs the example query on a click, and shows the demo
 * company's data and the client-facing schema's docs. The assets are the ones `npm run
 * build` made, built again first if the sources changed since
 * (test/helpers/explorerAssets.ts). The screenshot is kept in test/artifacts/explorer.png.
 */

const repoRoot = path.resolve(__dirname, '../..');
const artifactsDir = path.join(repoRoot, 'test', 'artifacts');
const chromiumPath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

describe('explorer in a real browser', () => {
  let demo: Demo;
  let server: RunningServer;
  let baseUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    const assetsDir = await explorerAssets();
    demo = await startDemo(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' }));
    const quiet = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    server = await startServer(demo.config, {
      logger: createLogger('warn', quiet),
      defaultTenant: demo.defaultTenant,
      explorerHeaders: { [demo.config.tenantHeader]: demo.defaultTenant },
      explorerAssetsDir: assetsDir,
      live: { pollIntervalMs: 100 },
    });
    baseUrl = server.url.replace(/\/graphql$/, '');
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }, EXPLORER_ASSETS_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await demo?.emulator.close();
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
    const tenant = demo.emulator.tenants.find((candidate) => candidate.tenantId === demo.defaultTenant);
    if (!tenant) throw new Error('the default demo tenant is not among the emulator tenants');
    const firstOperationLine = EXAMPLE_QUERY.split('\n').find((line) => line.startsWith('query')) ?? '';
    await page.locator('.graphiql-query-editor').getByText(firstOperationLine.replace(/\s*\{$/, '')).waitFor();
    await page.locator('.graphiql-editor-tool').getByText(tenant.tenantId).waitFor();

    // Monaco renders only the lines in view: the whole response is read as it arrives.
    const answered = page.waitForResponse((response) => response.url().endsWith('/graphql') && (response.request().postData() ?? '').includes('query Rota'));
    await page.getByRole('button', { name: /^Execute query/ }).click();
    const resultPane = page.locator('.result-window');
    const [firstLocation] = tenant.locations;
    await resultPane.getByText(firstLocation?.name ?? 'no demo location').first().waitFor();
    const resultText = await (await answered).text();
    expect(resultText).toContain('"shifts"');
    expect(resultText).toContain(tenant.shifts[0]?.id ?? 'no demo shift');
    expect(resultText).not.toContain('"errors"');

    mkdirSync(artifactsDir, { recursive: true });
    await page.screenshot({ path: path.join(artifactsDir, 'explorer.png') });

    // The schema docs (Playground's DOCS tab) come from introspection, under the same CSP,
    // and show the client-facing schema: none of the federation machinery the router uses.
    await page.getByRole('button', { name: 'Show Documentation Explorer' }).click();
    const docs = page.locator('.graphiql-doc-explorer');
    await docs.getByText('LocationConnection', { exact: true }).first().waitFor();
    const typeList = await docs.innerText();
    expect(typeList).toContain('DateTime');
    for (const name of ['_Service', '_Any', '_Entity', 'link__', 'federation__', '_entities', '_service']) expect(typeList).not.toContain(name);
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

  it('runs a subscription over graphql-ws, with the Headers tab as its identity, and shows a change as it happens', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text().slice(0, 300)}`);
    });
    // What the page sends for /graphql, over HTTP and over graphql-ws, read from the network.
    const sent: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/graphql') sent.push(`POST ${request.postData() ?? ''}`);
    });
    page.on('websocket', (socket) => socket.on('framesent', ({ payload }) => sent.push(`WS ${String(payload)}`)));
    await page.goto(`${baseUrl}/`);
    // GraphiQL is ready once the example query is in its editor (GraphiQL 5's editor is Monaco).
    const firstOperationLine = EXAMPLE_QUERY.split('\n').find((line) => line.startsWith('query')) ?? '';
    await page.locator('.graphiql-query-editor').getByText(firstOperationLine.replace(/\s*\{$/, '')).waitFor();
    const editor = page.locator('.graphiql-query-editor .monaco-editor').first();
    await editor.click();
    // Keystrokes reach the document GraphiQL sends once Monaco's own text area has the focus.
    await page.locator('.graphiql-query-editor .monaco-editor.focused').waitFor();
    const execute = await page.getByRole('button', { name: /^Execute query/ }).boundingBox();
    if (!execute) throw new Error('the Execute button is not on the page');
    const sentBefore = sent.length;
    // A user pastes a subscription over the example query and runs it at once: selected all and inserted as
    // text (no brackets auto-closed), then Execute clicked with no wait, the pointer already on it, before
    // GraphiQL (100 ms after the last edit) derives the operation name from the new text. It still tracks the
    // example's `Rota` then, which the explorer's fetcher must not send with the subscription
    // (src/explorer/browser/operationName.ts).
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.insertText('subscription { shiftChanges { kind shift { id end } } }');
    await page.mouse.click(execute.x + execute.width / 2, execute.y + execute.height / 2);
    // What went out after the click (GraphiQL's schema introspection aside, which it may still be sending):
    // one graphql-ws subscribe with the document and no name, nothing over HTTP.
    const sentSince = () => sent.slice(sentBefore).filter((message) => !message.includes(`"operationName":"ExplorerSchema"`));
    const subscribeMessage = () => sentSince().find((message) => message.startsWith('WS ') && message.includes('"type":"subscribe"'));
    await waitFor(() => subscribeMessage() !== undefined || sentSince().some((message) => message.startsWith('POST ')), 'the explorer to send the operation').catch((error: Error) => {
      throw new Error(`${error.message}; the page sent ${JSON.stringify(sentSince())}; ${problems.join('; ') || 'no page errors'}`);
    });
    const subscribe = subscribeMessage();
    if (!subscribe) throw new Error(`the explorer sent no graphql-ws subscribe, but ${JSON.stringify(sentSince())}`);
    const { payload } = JSON.parse(subscribe.slice('WS '.length)) as { payload: { query: string; operationName?: string } };
    expect(payload.query).toBe('subscription { shiftChanges { kind shift { id end } } }');
    expect(payload).not.toHaveProperty('operationName');
    expect(sentSince().filter((message) => message.startsWith('POST '))).toEqual([]);
    await waitFor(() => server.live.subscriptions === 1, 'the explorer subscribed').catch(async (error: Error) => {
      // What the page shows says why: a refusal in the result pane, or nothing sent at all.
      const shown = await page.locator('.result-window').innerText().catch(() => '(no result pane)');
      throw new Error(`${error.message}; the result pane shows ${JSON.stringify(shown.slice(0, 500))}; ${problems.join('; ') || 'no page errors'}`);
    });
    const tenant = demo.emulator.tenants.find((candidate) => candidate.tenantId === demo.defaultTenant)!;
    const shift = tenant.shifts[1]!;
    // Edited once the baseline is read (the demo's own edits may come first; any change will do).
    await waitFor(async () => (await livePolls(server)) >= 1, 'the baseline poll');
    editShiftEnd(shift);
    await page.locator('.result-window').getByText('UPDATED').first().waitFor({ timeout: 60_000 });
    expect(problems).toEqual([]);
    await context.close();
    await waitFor(() => server.live.subscriptions === 0, 'the subscription ended with the page');
  }, 90_000);
});
