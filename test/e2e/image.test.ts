import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { emulatorEnv } from '../helpers/postGraphQL';
import { waitFor } from '../helpers/waitFor';

/**
 * The Docker image's runtime stage without Docker (there is no engine on the build
 * machines): the Dockerfile's own production install into an empty folder, the built
 * `dist/` and `schema.graphql` copied in as its COPY lines do, its compile-cache step,
 * then its CMD against an upstream. A development checkout hoists every package to the
 * top of node_modules; a production install does not, which is how a bundle that
 * looked for a nested package once failed only in the image.
 */
const root = join(__dirname, '..', '..');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));

/** The runtime stage's `RUN npm ci …` words, up to the first `&&`. */
const installWords = /^RUN (npm ci [^&\n]*)/m.exec(runtime)![1]!.trim().split(/\s+/);
/** The `node -e "…"` that fills the compile cache. */
const fillScript = /node -e "([^"]+)"/.exec(runtime.slice(runtime.indexOf('NODE_COMPILE_CACHE')))![1]!;
const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(runtime)![1]!) as string[];

let emulator: Emulator;
let app: string;

/** Every package a node_modules folder holds, nested ones included, by name. */
function installedPackages(nodeModules: string): Set<string> {
  const names = new Set<string>();
  const visit = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      const scoped = entry.startsWith('@') ? readdirSync(join(dir, entry)).map((name) => `${entry}/${name}`) : [entry];
      for (const name of scoped) {
        names.add(name);
        visit(join(dir, name, 'node_modules'));
      }
    }
  };
  visit(nodeModules);
  return names;
}

/** The explorer's front end: built into dist/explorer/assets/ at build time, never installed in production. */
const FRONT_END_PACKAGES = ['react', 'react-dom', 'graphiql', '@graphiql/react', '@graphiql/toolkit', 'monaco-editor', 'monaco-graphql', 'scheduler'];

beforeAll(async () => {
  if (!existsSync(join(root, 'dist', 'main.js'))) throw new Error('dist/ is missing: run `npm run build` first (scripts/test.sh does)');
  emulator = await startEmulator({ authPathPrefix: '/tenants/gateway/auth' });
  app = mkdtempSync(join(tmpdir(), 'wfs-image-'));
  for (const file of ['package.json', 'package-lock.json', 'schema.graphql']) cpSync(join(root, file), join(app, file));
  // --prefer-offline: the packages are in npm's cache already, from the checkout's own install.
  const install = spawnSync(installWords[0]!, [...installWords.slice(1), '--prefer-offline'], { cwd: app, encoding: 'utf8', timeout: 240_000 });
  if (install.status !== 0) throw new Error(`${installWords.join(' ')} failed: ${install.stderr.slice(-2_000)}`);
  cpSync(join(root, 'dist'), join(app, 'dist'), { recursive: true });
}, 300_000);

afterAll(async () => {
  await emulator?.close();
  if (app) rmSync(app, { recursive: true, force: true });
});

describe('the image, its runtime stage without Docker', () => {
  it('installs production dependencies only (no TypeScript, no esbuild, no jest)', () => {
    expect(installWords).toEqual(expect.arrayContaining(['--omit=dev']));
    for (const tool of ['typescript', 'esbuild', 'jest']) expect(existsSync(join(app, 'node_modules', tool))).toBe(false);
  });

  it('installs no front-end package: the explorer comes built in dist/', () => {
    const installed = installedPackages(join(app, 'node_modules'));
    expect(installed.has('undici')).toBe(true); // the walk sees packages at all
    expect(FRONT_END_PACKAGES.filter((name) => installed.has(name))).toEqual([]);
    expect(existsSync(join(app, 'dist', 'explorer', 'assets', 'manifest.json'))).toBe(true);
  });

  it("fills the compile cache without starting anything, then serves an upstream and the explorer (WFS_EXPLORER=true) with the CMD and stops on SIGTERM", async () => {
    const cache = join(app, '.compile-cache');
    const fill = spawnSync(process.execPath, ['-e', fillScript], { cwd: app, env: { PATH: process.env.PATH ?? '', NODE_COMPILE_CACHE: cache }, encoding: 'utf8', timeout: 60_000 });
    expect(fill.stderr).toBe('');
    expect(fill.status).toBe(0);

    expect(cmd[0]).toBe('node');
    const child = spawn(process.execPath, cmd.slice(1), {
      cwd: app,
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        NODE_COMPILE_CACHE: cache,
        HOST: '127.0.0.1',
        PORT: '0',
        ...emulatorEnv(emulator, 'image-cursor-secret-0123456789abcdefghij'),
        // The emulator is on loopback and the test sends the tenant header itself.
        WFS_API_BASE_ALLOW: '127.0.0.1',
        WFS_TRUSTED_NETWORK: 'true',
        WFS_EXPLORER: 'true',
        // The shortest drain after SIGTERM (test/e2e/drain.test.ts tests the drain).
        WFS_DRAIN_SECONDS: '1',
      },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += String(chunk)));
    child.stderr.on('data', (chunk) => (err += String(chunk)));
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(() => /"url":"http:[^"]+"/.test(out) || child.exitCode !== null, 'the ready log line');
      const url = /"url":"(http:[^"]+)"/.exec(out)?.[1];
      if (!url) throw new Error(`the server did not start: ${err}`);
      const tenant = emulator.tenants[0]!;
      const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': tenant.tenantId }, body: JSON.stringify({ query: '{ locations(first: 2) { nodes { id } } }' }) });
      const body = (await response.body.json()) as { data?: { locations: { nodes: Array<{ id: string }> } } };
      expect(body.data?.locations.nodes.map((node) => node.id)).toEqual(tenant.locations.slice(0, 2).map((location) => location.id));

      const origin = new URL(url).origin;
      const page = await request(`${origin}/`);
      const html = await page.body.text();
      expect(page.statusCode).toBe(200);
      // The page's scripts, stylesheets and icon, and Monaco's three workers named in its settings.
      const assetPaths = [...html.matchAll(/(?:src|href|Worker|json|graphql)"?[=:]"(\/explorer\/assets\/[^"]+)"/g)].map((match) => match[1]!);
      expect(assetPaths.length).toBe(7);
      for (const assetPath of assetPaths) {
        const asset = await request(`${origin}${assetPath}`);
        expect({ assetPath, status: asset.statusCode }).toEqual({ assetPath, status: 200 });
        await asset.body.dump();
      }
      child.kill('SIGTERM');
      expect(await exit).toBe(0);
      expect(err).toBe('');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
