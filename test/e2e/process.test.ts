import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { ConfigError, loadConfig, startupFailureLine } from '../../src/config';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { isSupportedNodeVersion, MINIMUM_NODE_VERSION } from '../../src/nodeVersion';
import { startRedisServer } from '../helpers/redisServer';
import { emulatorEnv, postGraphQL } from '../helpers/postGraphQL';
import { waitFor } from '../helpers/waitFor';

/**
 * The built server as a deployment runs it: `node dist/index.js` with the
 * environment of docs/configuration.md, "Settings". `scripts/test.sh` builds before jest runs.
 */
const root = join(__dirname, '..', '..');
const entry = join(root, 'dist', 'index.js');

interface Running {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

function run(env: Record<string, string>, nodeFlags: readonly string[] = []): Running {
  if (!existsSync(entry)) throw new Error('dist/index.js is missing: run `npm run build` first (scripts/test.sh does)');
  // The shortest drain after SIGTERM: these tests stop the server, test/e2e/drain.test.ts tests the drain.
  const child = spawn(process.execPath, [...nodeFlags, entry], { cwd: '/', env: { PATH: process.env.PATH ?? '', PORT: '0', WFS_DRAIN_SECONDS: '1', ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += String(chunk)));
  child.stderr.on('data', (chunk) => (err += String(chunk)));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** The first group of `pattern` in what the running server printed, once it printed it. */
async function printed(pattern: RegExp, what: string): Promise<string> {
  let found: string | undefined;
  await waitFor(() => (found = pattern.exec(running!.stdout())?.[1]) !== undefined, what, 15_000);
  return found!;
}

const post = (url: string, query: string, headers: Record<string, string> = {}) => postGraphQL(url, { query }, headers);

let running: Running | undefined;
afterEach(async () => {
  if (running && running.child.exitCode === null) {
    running.child.kill('SIGKILL');
    await running.exit;
  }
  running = undefined;
});

describe('node dist/index.js', () => {
  it('starts in demo mode from any directory, prints the URL, tenants and a query, serves demo data, and stops on SIGTERM', async () => {
    running = run({});
    const url = await printed(/GraphQL:\s+(http:\S+)/, 'the banner');
    expect(running.stdout()).toMatch(/Demo tenants/);
    expect(running.stdout()).toMatch(/query/);
    const answer = await post(url, '{ locations(first: 3) { nodes { id name } } shifts(first: 2) { nodes { id start location { name } } } }');
    expect(answer.errors).toBeUndefined();
    expect(answer.data.locations.nodes).toHaveLength(3);
    expect(answer.data.shifts.nodes[0].location.name).toEqual(expect.any(String));
    const origin = new URL(url).origin;
    expect((await request(`${origin}/health`)).statusCode).toBe(200);
    const ready = await request(`${origin}/ready`);
    expect(ready.statusCode).toBe(200);
    await ready.body.dump();
    const metrics = await request(`${origin}/metrics`);
    expect(await metrics.body.text()).toContain('wfs_upstream_requests_total');
    const page = await request(`${origin}/`, { headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(200);
    expect(await page.body.text()).toContain('<html');
    running.child.kill('SIGTERM');
    expect(await running.exit).toBe(0);
  });

  // The machine's own Node when it is older than the project needs (CI's system Node 20); npm scripts run Node 24.
  const olderNode = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => dir && !dir.includes('node_modules'))
    .map((dir) => join(dir, 'node'))
    .find((binary) => existsSync(binary) && !isSupportedNodeVersion(spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.trim()));

  (olderNode ? it : it.skip)(`stops with one line on a Node.js older than ${MINIMUM_NODE_VERSION}`, () => {
    const started = spawnSync(olderNode!, [entry], { cwd: '/', env: { PATH: process.env.PATH ?? '', PORT: '0' }, encoding: 'utf8', timeout: 20_000 });
    expect(started.status).toBe(1);
    expect(started.stderr.trim().split('\n')).toHaveLength(1);
    expect(started.stderr).toMatch(new RegExp(`^wfs-subgraph: needs Node\\.js ${MINIMUM_NODE_VERSION.replace(/\./g, '\\.')} or later, this is v\\d+`));
    expect(started.stdout).toBe('');
  });

  it('stops with one line naming the variable when the configuration is bad', async () => {
    running = run({ WFS_AUTH_URL: 'https://id.example.com' });
    expect(await running.exit).toBe(1);
    expect(running.stderr().trim().split('\n')).toHaveLength(1);
    expect(running.stderr()).toContain('WFS_TENANTS_FILE');
  });

  /**
   * What the process above printed for its refusal, for another environment, without a
   * process: the test above shows that a configuration refused by `loadConfig` stops
   * `node dist/index.js` with exit 1 and `startupFailureLine` as its only output, before
   * the demo or the server is loaded (main.ts). A process per setting cost a start of
   * the whole bundle (about 0.5 CPU-s each) to show the same.
   */
  const refusal = (env: Record<string, string>): string => {
    try {
      loadConfig({ PORT: '0', ...env });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return startupFailureLine(error);
    }
    throw new Error(`started with ${JSON.stringify(env)}`);
  };

  it.each([
    ['a typo in production', { NODE_ENV: 'production', WFS_AUTH_ULR: 'https://id.example.com', WFS_TENANTS_FILE: '/nonexistent.json' }, /WFS_AUTH_ULR.*did you mean WFS_AUTH_URL/],
    ['production without an upstream', { NODE_ENV: 'production' }, /WFS_AUTH_URL.*WFS_DEMO=true/],
    ['an upstream setting without WFS_AUTH_URL', { WFS_TENANTS_FILE: '/nonexistent.json' }, /WFS_AUTH_URL.*WFS_TENANTS_FILE/],
    ['a plain-http auth URL off loopback', { WFS_AUTH_URL: 'http://id.example.com', WFS_TENANTS_FILE: '/nonexistent.json' }, /WFS_AUTH_URL.*https/],
  ])('never starts demo mode by accident: %s stops start-up with one line', (_name, env, line) => {
    // Refused by loadConfig, the first step of start-up: the demo is never loaded.
    const stderr = refusal(env as Record<string, string>);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(line);
  });

  describe('production secrets', () => {
    const production = { NODE_ENV: 'production', WFS_AUTH_URL: 'https://id.example.com', WFS_TENANTS_FILE: '/nonexistent.json' };
    const good = { WFS_CURSOR_SECRET: 'e2e-cursor-secret-0123456789abcdefghij', WFS_ROUTER_SECRET: 'e2e-router-secret-0123456789abcdef' };
    /**
     * The placeholder deploy/secrets/*.env.example and deploy/k8s/secret.yaml shipped until the
     * examples were emptied: an operator who copied an older example still has it.
     */
    const placeholder = 'replace-with-openssl-rand-hex-32';
    const shipped = { WFS_CURSOR_SECRET: placeholder, WFS_ROUTER_SECRET: placeholder, WFS_REDIS_KEY: placeholder };

    it.each([
      ['the shipped placeholder as cursor secret', { ...good, WFS_CURSOR_SECRET: shipped.WFS_CURSOR_SECRET! }, /^wfs-subgraph: WFS_CURSOR_SECRET: is still the example placeholder/],
      ['the shipped placeholder as router secret', { ...good, WFS_ROUTER_SECRET: shipped.WFS_ROUTER_SECRET! }, /^wfs-subgraph: WFS_ROUTER_SECRET: is still the example placeholder/],
      ['the shipped placeholder as Redis key', { ...good, WFS_REDIS_URL: 'redis://127.0.0.1:1', WFS_REDIS_KEY: shipped.WFS_REDIS_KEY! }, /^wfs-subgraph: WFS_REDIS_KEY: is still the example placeholder/],
      ['a cursor secret of one repeated character', { ...good, WFS_CURSOR_SECRET: 'a'.repeat(64) }, /^wfs-subgraph: WFS_CURSOR_SECRET: has too little variety/],
      ['no cursor secret', { WFS_ROUTER_SECRET: good.WFS_ROUTER_SECRET }, /^wfs-subgraph: WFS_CURSOR_SECRET: is required with NODE_ENV=production/],
      ['trusted-header mode without a router secret', { WFS_CURSOR_SECRET: good.WFS_CURSOR_SECRET }, /^wfs-subgraph: WFS_ROUTER_SECRET: is required .*WFS_TRUSTED_NETWORK=true/],
    ])('refuses %s: one line naming the variable, exit 1, no secret echoed', (_name, env, line) => {
      const stderr = refusal({ ...production, ...env });
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(line);
      for (const value of Object.values(env)) if (!value.startsWith('redis:')) expect(stderr).not.toContain(value);
    });

    it('refuses a missing cursor secret with Redis outside production too', () => {
      const stderr = refusal({ WFS_AUTH_URL: 'https://id.example.com', WFS_TENANTS_FILE: '/nonexistent.json', WFS_REDIS_URL: 'redis://127.0.0.1:1', WFS_REDIS_KEY: 'e2e-redis-key-0123456789abcdefghijklmnop' });
      expect(stderr).toMatch(/^wfs-subgraph: WFS_CURSOR_SECRET: is required with WFS_REDIS_URL/);
    });
  });

  it('runs the demo in production only when asked for, and says so', async () => {
    running = run({ NODE_ENV: 'production', WFS_DEMO: 'true' });
    const url = await printed(/GraphQL:\s+(http:\S+)/, 'the banner');
    const answer = await post(url, '{ locations(first: 1) { nodes { id } } }');
    expect(answer.data.locations.nodes).toHaveLength(1);
    expect(answer.extensions?.demoTenant).toEqual(expect.any(String));
    expect(running.stdout()).toMatch(/WFS_DEMO=true with NODE_ENV=production/);
    running.child.kill('SIGTERM');
    expect(await running.exit).toBe(0);
  });

  describe('against an upstream', () => {
    let emulator: Emulator;
    beforeAll(async () => {
      emulator = await startEmulator({ authPathPrefix: '/tenants/gateway/auth' });
    });
    afterAll(async () => {
      await emulator.close();
    });

    it('in production serves trusted-header mode without a router secret only with WFS_TRUSTED_NETWORK=true, and warns', async () => {
      running = run({
        NODE_ENV: 'production',
        ...emulatorEnv(emulator),
        WFS_TRUSTED_NETWORK: 'true',
        WFS_API_BASE_ALLOW: '127.0.0.1',
      });
      const url = await printed(/"url":"(http:[^"]+)"/, 'the ready log line');
      expect(running.stdout()).toMatch(/"level":40,[^\n]*WFS_TRUSTED_NETWORK=true/);
      const tenant = emulator.tenants[0]!;
      const answer = await post(url, '{ locations(first: 1) { nodes { id } } }', { 'x-tenant-id': tenant.tenantId });
      expect(answer.data.locations.nodes).toEqual([{ id: tenant.locations[0]!.id }]);
      running.child.kill('SIGTERM');
      expect(await running.exit).toBe(0);
    });

    /** The JSON log lines the running server printed so far. */
    const logLines = () =>
      running!
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string; ready?: boolean; reason?: string; heapLimitMiB?: number });

    it('says "listening, not ready yet" (never "ready") while the token endpoint check fails, and states its heap limit, warning that none was given', async () => {
      running = run({
        ...emulatorEnv(emulator),
        WFS_AUTH_URL: `${emulator.authUrl}/not-the-provider`,
      });
      const url = await printed(/"url":"(http:[^"]+)"/, 'the start-up line');
      const ready = await request(new URL('/ready', url));
      expect(ready.statusCode).toBe(503);
      await ready.body.dump();
      await waitFor(() => logLines().some((line) => line.level === 50 && /answered 404/.test(line.msg)), 'the check failing', 15_000);
      const started = logLines().find((line) => line.msg.startsWith('subgraph'))!;
      expect(started).toMatchObject({ msg: expect.stringMatching(/^subgraph listening, not ready yet/), ready: false, reason: expect.any(String) });
      expect(logLines().filter((line) => /ready$/.test(line.msg) && !/not ready/.test(line.msg))).toEqual([]);
      expect(started.heapLimitMiB).toBeGreaterThan(0);
      expect(logLines()).toContainEqual(expect.objectContaining({ level: 40, heapLimitMiB: started.heapLimitMiB, msg: expect.stringContaining('no --max-old-space-size') }));
    });

    /**
     * `node <nodeFlags> dist/index.js` with a preload that records every module file the
     * process loaded: `whileServing` runs once it printed its URL, then it gets SIGTERM;
     * what it served, its exit code, its output and the modules it loaded, read after it exits.
     */
    async function serveAndListModules<T>(env: Record<string, string>, nodeFlags: readonly string[], whileServing: (url: string) => Promise<T>) {
      const dir = mkdtempSync(join(tmpdir(), 'wfs-bundle-'));
      const listFile = join(dir, 'loaded.json');
      const preload = join(dir, 'list-modules.js');
      writeFileSync(preload, `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(listFile)}, JSON.stringify(Object.keys(require.cache))));`);
      running = run(
        {
          ...emulatorEnv(emulator),
          NODE_OPTIONS: `--require ${preload}`,
          ...env,
        },
        nodeFlags,
      );
      const url = await printed(/"url":"(http:[^"]+)"/, 'the ready log line');
      const served = await whileServing(url);
      running.child.kill('SIGTERM');
      const exitCode = await running.exit;
      const loaded = (JSON.parse(readFileSync(listFile, 'utf8')) as string[]).filter((file) => file !== preload);
      const dist = join(root, 'dist');
      return {
        served,
        exitCode,
        stdout: running.stdout(),
        stderr: running.stderr(),
        ours: loaded.filter((file) => file.startsWith(dist)).map((file) => file.slice(dist.length + 1)).sort(),
        packages: [...new Set(loaded.filter((file) => file.includes('node_modules')).map((file) => /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(file)![1]!))].sort(),
      };
    }

    /** The locations of the first two of `tenant`'s locations, as it answered them, and as the emulator has them. */
    const firstTwo = async (url: string, tenant: Emulator['tenants'][number]) => {
      const answer = await post(url, '{ locations(first: 2) { nodes { id name } } }', { 'x-tenant-id': tenant.tenantId });
      return { answered: answer.data?.locations?.nodes?.map((n: { id: string }) => n.id), expected: tenant.locations.slice(0, 2).map((l) => l.id) };
    };

    /**
     * One start serves the next three tests, each of which reads its own part of it (the
     * process is never shared by a test that changes it): the documented heap flags,
     * LOG_LEVEL=debug and the module-listing preload, a query for every tenant once it
     * said it is ready, then SIGTERM. Three processes (each a start of the bundle) showed the same.
     */
    describe('started with the heap flags, LOG_LEVEL=debug and a preload that lists its modules, serving every tenant, then stopped', () => {
      let started: Awaited<ReturnType<typeof serveAndListModules<Awaited<ReturnType<typeof whileServing>>>>>;
      let lines: ReturnType<typeof logLines>;
      async function whileServing(url: string) {
        // Either the start-up line is the ready one, or the check's answer came after it and says so.
        await waitFor(() => logLines().some((line) => line.msg === 'subgraph ready' || line.msg === 'token endpoint answers like one: ready'), 'a ready line', 15_000);
        const ready = await request(new URL('/ready', url));
        await ready.body.dump();
        const answers = [];
        for (const tenant of emulator.tenants) answers.push(await firstTwo(url, tenant));
        return { ready: ready.statusCode, answers, tokenRequests: emulator.counters.tokenRequests };
      }
      beforeAll(async () => {
        emulator.resetCounters();
        started = await serveAndListModules({ LOG_LEVEL: 'debug' }, ['--max-semi-space-size=8', '--max-old-space-size=256'], whileServing);
        lines = logLines();
      });

      it('serves every configured tenant and never prints a secret or a token', () => {
        for (const { answered, expected } of started.served.answers) expect(answered).toEqual(expected);
        expect(started.served.tokenRequests).toBe(emulator.tenants.length);
        const output = started.stdout + started.stderr;
        for (const tenant of emulator.tenants) expect(output).not.toContain(tenant.clientSecret);
        expect(output).not.toMatch(/eyJ[\w-]+\.eyJ/);
      });

      it('started with the documented heap flags, states that limit, warns of nothing, and says when it turns ready', () => {
        expect(started.served.ready).toBe(200);
        const startLine = lines.find((line) => line.msg.startsWith('subgraph'))!;
        // V8's limit is the old generation's 256 MiB plus the young generation's semi-spaces.
        expect(startLine.heapLimitMiB).toBeGreaterThanOrEqual(256);
        expect(startLine.heapLimitMiB).toBeLessThan(320);
        // Not while it started, served, drained or stopped.
        expect(lines.filter((line) => line.level >= 40)).toEqual([]);
      });

      it('is one bundled file: serves a query having loaded no other module of ours and no optional package', () => {
        expect(started.served.answers[0]!.answered).toEqual(started.served.answers[0]!.expected);
        expect(started.exitCode).toBe(0);
        // Exit 0 after the ordered close, not because nothing was left to keep the process alive.
        expect(started.stdout).toMatch(/"msg":"stopped: requests drained/);
        expect(started.ours).toEqual(['compileCache.js', 'index.js', 'main.js', 'nodeVersion.js']);
        // Nothing from node_modules: what only some deployments load stays there until configured (scripts/bundle/build.mjs).
        expect(started.packages).toEqual([]);
      });
    });

    it('loads the Redis client from node_modules when WFS_REDIS_URL is set, and shares the token through it', async () => {
      const redis = await startRedisServer();
      try {
        const { served, exitCode, stdout, ours, packages } = await serveAndListModules({ WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: 'e2e-redis-key-0123456789abcdefghijklmnop' }, [], (url) => firstTwo(url, emulator.tenants[0]!));
        expect(served.answered).toEqual(served.expected);
        expect(exitCode).toBe(0);
        expect(stdout).toMatch(/"msg":"stopped: requests drained/);
        expect(ours).toEqual(['compileCache.js', 'index.js', 'main.js', 'nodeVersion.js']);
        expect(packages).toContain('ioredis');
        const admin = new Redis(redis.url);
        const keys = await admin.keys('*').finally(() => admin.disconnect());
        expect(keys).toContain(`wfs:token:${emulator.tenants[0]!.tenantId}`);
      } finally {
        await redis.stop();
      }
    });
  });
});
